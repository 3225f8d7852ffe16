#!/usr/bin/env python3
"""Run the original `cohere-transcribe` CLI (PyPI cohere-transcribe==0.1.4) in this
process with observers on its ASR batches, so make_golden.py can record which
segments went into each generate() call, with which token budget, and the
token ids each row generated. Observers only: nothing the product computes,
prints or writes is changed (the wrapped functions are called with the same
arguments and their results returned untouched).

    GOLDEN_TRACE=/path/trace.jsonl python golden_trace.py <cohere-transcribe argv...>

One JSON object per generate() call is appended to $GOLDEN_TRACE (JSON lines,
flushed at once, so a crash keeps the calls made so far).
"""

import json
import os
import sys


def _install_observers(trace_path):
    # The CLI sets its environment defaults before torch is imported; do the
    # same before our imports pull torch in, so the run sees what it would.
    from cohere_transcribe._environment import configure_runtime_environment
    configure_runtime_environment()
    from cohere_transcribe.asr import execution, generation, orchestration

    original = generation.generate_asr_batch
    state = {"call": 0}

    def observed_generate_asr_batch(model, prepared, args, max_new_tokens):
        result = original(model, prepared, args, max_new_tokens)
        generated = result.generated.tolist()
        prompt_len = result.prompt_length
        rows = []
        for row_index, (sample_index, _chunk) in enumerate(prepared.chunk_index):
            ref = prepared.refs[sample_index]
            row = generated[row_index]
            count = result.row_token_counts[row_index]
            rows.append({
                "file": str(ref.job.relative_path),
                "path": str(ref.job.path),
                "segment_index": ref.segment_index,
                "start": ref.start,
                "end": ref.end,
                "prompt_ids": row[:prompt_len],
                # generated ids as the product counts them: up to and including
                # EOS, or up to the limit (trailing pad of finished rows removed)
                "generated_ids": row[prompt_len:prompt_len + count],
                "generated_tokens": count,
                "stopped_by_max_tokens": ref_index_in(result.truncated_ref_indices, sample_index),
                "repetition_stopped": ref_index_in(result.repetition_ref_indices, sample_index),
            })
        mask = prepared.model_inputs.get("attention_mask")
        record = {
            "call": state["call"],
            "max_new_tokens": max_new_tokens,
            "rows": rows,
            "feature_frames_padded": int(prepared.model_inputs["input_features"].shape[1]),
            "feature_frames_valid": [int(v) for v in mask.sum(dim=1).tolist()] if mask is not None else None,
        }
        state["call"] += 1
        with open(trace_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        return result

    # Callers imported the function by name: replace every binding.
    generation.generate_asr_batch = observed_generate_asr_batch
    orchestration.generate_asr_batch = observed_generate_asr_batch
    execution.generate_asr_batch = observed_generate_asr_batch


def _install_alignment_observers(trace_path, emissions_dir):
    """Word mode: keep each file's CTC emissions (log-probs, the extra <star>
    column included, exactly what align_words receives) and each segment's
    normalised/romanised aligner tokens."""
    import numpy as np
    from cohere_transcribe.alignment import text_utils
    from cohere_transcribe.output import pipeline

    original_emissions = pipeline.compute_emissions_streaming

    def observed_emissions(audio, model, batch_size, label):
        emissions, stride = original_emissions(audio, model, batch_size, label)
        if emissions_dir:
            os.makedirs(emissions_dir, exist_ok=True)
            np.save(os.path.join(emissions_dir, label + ".npy"), emissions)
        with open(trace_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"emissions": label, "frames": int(emissions.shape[0]),
                                 "columns": int(emissions.shape[1]), "stride_ms": stride,
                                 "audio_samples": int(len(audio))}) + "\n")
        return emissions, stride

    pipeline.compute_emissions_streaming = observed_emissions

    original_pre = text_utils.preprocess_text

    def observed_preprocess_text(text, language, *a, **k):
        tokens_starred, text_starred = original_pre(text, language, *a, **k)
        with open(trace_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"preprocess_text": text, "language": language,
                                 "tokens_starred": tokens_starred,
                                 "text_starred": text_starred}, ensure_ascii=False) + "\n")
        return tokens_starred, text_starred

    text_utils.preprocess_text = observed_preprocess_text


def ref_index_in(indices, sample_index):
    return int(sample_index) in {int(i) for i in indices}


def main():
    argv = sys.argv[1:]
    trace_path = os.environ.get("GOLDEN_TRACE")
    if os.environ.get("GOLDEN_CPU_COUNT"):
        # The original probes input durations with min(files, 8, cpu_count // 2)
        # workers but, with one worker, probes only the first file; unprobed
        # files are isolated in their own preparation group (one file per
        # batch). Pretending to have more cores shows its grouping on a
        # bigger machine.
        n = int(os.environ["GOLDEN_CPU_COUNT"])
        os.cpu_count = lambda: n
    sys.argv = ["cohere-transcribe"] + argv
    if trace_path:
        _install_observers(trace_path)
        _install_alignment_observers(trace_path, os.environ.get("GOLDEN_EMISSIONS"))
    from cohere_transcribe.cli import cli
    raise SystemExit(cli())


if __name__ == "__main__":
    main()
