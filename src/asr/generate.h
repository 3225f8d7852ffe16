/* generate.h — batched greedy decoding over rows of different lengths.
 *
 * Every row gets its own prompt (same length for all rows: the Cohere prompt
 * is 10 tokens for any language/punctuation choice); the prompt runs as one
 * step, then one token per active row per step. A row stops at EOS (the EOS
 * token is kept), at max_new_tokens, or where the position table ends
 * (prompt + generated = max positions); finished rows leave the work.
 */
#ifndef CT_ASR_GENERATE_H
#define CT_ASR_GENERATE_H

#include "asr/decoder.h"

typedef enum ct_stop_reason {
    CT_STOP_NONE = 0,      /* not run */
    CT_STOP_EOS = 1,       /* produced the end-of-text token */
    CT_STOP_MAX_TOKENS = 2, /* reached max_new_tokens */
    CT_STOP_POSITIONS = 3  /* reached the end of the decoder's position table */
} ct_stop_reason;

const char *ct_stop_reason_name(ct_stop_reason r);

typedef struct ct_generate_options {
    int max_new_tokens; /* > 0 */
    int32_t eos_id;
    int ignore_eos;  /* benchmarks: keep going to max_new_tokens */
    int keep_logits; /* copy the logits that chose each token */
    /* NULL, or (B) a budget per row, each in 1..max_new_tokens: row b stops
     * at row_max_new_tokens[b] (benchmarks give every row its own exact
     * count with ignore_eos; CT_STOP_MAX_TOKENS there). */
    const int *row_max_new_tokens;
    /* Teacher forcing: (B, max_new_tokens) host ids, or NULL. Row b's input
     * after its g-th generated token is forced[b·max_new_tokens + g] instead
     * of that token, while tokens[] still records each step's argmax (and
     * logits its scores); EOS does not stop a forced row, the budget does.
     * The basis of parity along a reference's path and of forced alignment. */
    const int32_t *forced;
    /* Where the loop runs (generate_dev.c): CT_LOOP_AUTO takes the device
     * loop, captured as a graph, on a backend that captures graphs (CUDA)
     * unless keep_logits, else the host loop; the others force one (the
     * device loop refuses keep_logits; DEVICE_EAGER runs its steps without
     * a graph, on any backend with the version 4 step ops). */
    int loop;
} ct_generate_options;

enum { CT_LOOP_AUTO = 0, CT_LOOP_HOST = 1, CT_LOOP_DEVICE = 2, CT_LOOP_DEVICE_EAGER = 3 };

/* Workspace bytes the loop takes beyond the decoder step's
 * (ct_decoder_step_bytes): the logits and the device loop's state. */
size_t ct_generate_ws_bytes(const ct_asr_hparams *hp, int B, int max_new_tokens);

typedef struct ct_generate_row {
    int32_t *tokens; /* (n_tokens) malloc'd, generated ids after the prompt */
    int n_tokens;
    ct_stop_reason stop;
    float *logits; /* (n_tokens, vocab) malloc'd when keep_logits */
} ct_generate_row;

/* Number of KV positions a request needs: prompt + max_new_tokens, capped at
 * the position table. */
int ct_generate_cache_positions(const ct_asr_hparams *hp, int prompt_len, int max_new_tokens);

/* prompts (B, P) host; st prepared for B slots; rows (B) receive results
 * (free them with ct_generate_rows_free). Scratch from ws. */
ct_status ct_generate_greedy(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                             const int32_t *prompts, int P, const ct_generate_options *opts, ct_generate_row *rows);
void ct_generate_rows_free(ct_generate_row *rows, int B);

#endif
