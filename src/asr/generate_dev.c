/* generate_dev.c — greedy decoding with the loop's state in backend memory.
 *
 * The host loop (generate.c) reads every step's argmax back, applies the
 * stop rules and compacts the rows still running: a device sync and ~150
 * launches per token, which on CUDA leaves the GPU waiting for the host.
 * Here the prompt runs as in the host loop, then every step is the same
 * launches: ct_decoder_step_dev reads ids and position from backend memory
 * and ct_op_greedy_step writes the next ones (argmax, stop rules, forced
 * tokens) there, so the step is captured once as a graph and replayed. All
 * B rows stay in the step (no compaction): rows that stopped are computed
 * but never recorded or fed. The host looks at the count of running rows
 * every POLL steps to end early, and reads the tokens once at the end.
 * Results equal the host loop's (tests/unit/test_generate_device.c) up to
 * matrix products over a different row count, where a backend's kernels
 * may round differently (bit-equal on the CPU reference).
 */
#include "asr/generate_dev.h"

#include <stdlib.h>
#include <string.h>

#include "compute/ops.h"

enum { POLL = 8 };

static int32_t *ints(ct_arena *ws, size_t n) { return ct_arena_alloc(ws, sizeof(int32_t) * (n ? n : 1)); }

ct_status ct_generate_greedy_dev(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                                 const int32_t *prompts, int P, const ct_generate_options *opts, int budget,
                                 ct_stop_reason at_budget, int graph, ct_generate_row *rows) {
    const int B = st->slots, V = w->hp.vocab;
    const ct_backend_ops *o = be->ops;
    if (!ct_backend_has_device_steps(be))
        return ct_fail(CT_ERR_UNSUPPORTED, "generate: backend %s has no device steps", o->name);
    if (graph && !ct_backend_has_graphs(be))
        return ct_fail(CT_ERR_UNSUPPORTED, "generate: backend %s captures no graphs", o->name);
    if (opts->keep_logits) return ct_fail(CT_ERR_UNSUPPORTED, "generate: the device loop keeps no logits");
    /* forced ids that a row may be fed: the host loop's embed refuses bad
     * ones as they come; here they are checked before any step */
    for (int b = 0; opts->forced && b < B; b++) {
        int lim = opts->row_max_new_tokens && opts->row_max_new_tokens[b] < budget ? opts->row_max_new_tokens[b] : budget;
        for (int g = 0; g + 1 < lim; g++) {
            int32_t t = opts->forced[(size_t)b * opts->max_new_tokens + g];
            if (t < 0 || t >= V) return ct_fail(CT_ERR_INVALID_ARG, "embed: token id %d outside [0,%d)", t, V);
        }
    }
    size_t mark = ct_arena_mark(ws);
    ct_status s = CT_OK;
    void *exec = NULL;
    int *slot = malloc(sizeof(int) * (size_t)B);
    int32_t *host = malloc(sizeof(int32_t) * ((size_t)B * budget + 3 * (size_t)B + 2));
    float *logits = ct_arena_alloc(ws, sizeof(float) * (size_t)B * V);
    ct_greedy_state g = {.ids = ints(ws, B), .pos = ints(ws, 1), .tokens = ints(ws, (size_t)B * budget),
                         .count = ints(ws, B), .stop = ints(ws, B), .active = ints(ws, 1), .budget = budget,
                         .forced_stride = opts->max_new_tokens, .eos = opts->eos_id,
                         .stop_eos = opts->ignore_eos || opts->forced ? 0 : CT_STOP_EOS,
                         .stop_budget = (int)at_budget, .stop_row_budget = CT_STOP_MAX_TOKENS};
    int32_t *forced = opts->forced ? ints(ws, (size_t)B * opts->max_new_tokens) : NULL;
    int32_t *row_budget = opts->row_max_new_tokens ? ints(ws, B) : NULL;
    if (!slot || !host) {
        s = ct_fail(CT_ERR_OOM, "generate: buffers");
        goto done;
    }
    if (!logits || !g.ids || !g.pos || !g.tokens || !g.count || !g.stop || !g.active ||
        (opts->forced && !forced) || (opts->row_max_new_tokens && !row_budget)) {
        s = ct_fail_wrap(CT_ERR_OOM, "generate: device state");
        goto done;
    }
    g.forced = forced;
    g.row_budget = row_budget;
    /* state: nothing chosen, every row running, pos = P − 1 (the prompt's
     * greedy step advances it to P, the first generated position) */
    for (int b = 0; b < B; b++) slot[b] = b;
    memset(host, 0, sizeof(int32_t) * (size_t)B);
    host[B] = P - 1;
    host[B + 1] = B;
    if ((s = o->to_device(be, g.count, host, sizeof(int32_t) * (size_t)B)) != CT_OK ||
        (s = o->to_device(be, g.stop, host, sizeof(int32_t) * (size_t)B)) != CT_OK ||
        (s = o->to_device(be, g.ids, host, sizeof(int32_t) * (size_t)B)) != CT_OK ||
        (s = o->to_device(be, g.pos, host + B, sizeof(int32_t))) != CT_OK ||
        (s = o->to_device(be, g.active, host + B + 1, sizeof(int32_t))) != CT_OK)
        goto done;
    if (forced && (s = o->to_device(be, forced, opts->forced, sizeof(int32_t) * (size_t)B * opts->max_new_tokens)) != CT_OK)
        goto done;
    if (row_budget && (s = o->to_device(be, row_budget, opts->row_max_new_tokens, sizeof(int32_t) * (size_t)B)) != CT_OK)
        goto done;
    /* the prompt: host ids, as in the host loop */
    if ((s = ct_decoder_step(w, be, st, ws, prompts, slot, B, P, 0, logits)) != CT_OK) goto done;
    if ((s = ct_op_greedy_step(be, &g, ct_buf_f32(logits), B, V)) != CT_OK) goto done;
    /* every later step: the same launches; each greedy step adds one token
     * to every running row, so after `budget` of them all rows stopped */
    for (int step = 1; step < budget; step++) {
        if (step % POLL == 0) {
            int32_t active;
            if ((s = o->to_host(be, &active, g.active, sizeof active)) != CT_OK) goto done;
            if (!active) break;
        }
        /* the first device step runs as it is, not captured: what a backend
         * makes on first use (cuda: GEMM plans, biases converted for the
         * epilogue) is made there, outside the graph, which then holds the
         * step's kernels only. The same ops either way. */
        if (!graph || step == 1) {
            if ((s = ct_decoder_step_dev(w, be, st, ws, g.ids, g.pos, slot, B, logits)) != CT_OK) goto done;
            if ((s = ct_op_greedy_step(be, &g, ct_buf_f32(logits), B, V)) != CT_OK) goto done;
            continue;
        }
        if (!exec) {
            if ((s = o->graph_begin(be)) != CT_OK) goto done;
            s = ct_decoder_step_dev(w, be, st, ws, g.ids, g.pos, slot, B, logits);
            if (s == CT_OK) s = ct_op_greedy_step(be, &g, ct_buf_f32(logits), B, V);
            ct_status e = o->graph_end(be, &exec); /* always ends the capture */
            if (s == CT_OK) s = e;
            if (s != CT_OK) goto done;
        }
        if ((s = o->graph_launch(be, exec)) != CT_OK) goto done;
    }
    /* the results: tokens, counts, stop codes */
    int32_t *count = host + (size_t)B * budget, *stop = count + B;
    if ((s = o->to_host(be, host, g.tokens, sizeof(int32_t) * (size_t)B * budget)) != CT_OK ||
        (s = o->to_host(be, count, g.count, sizeof(int32_t) * (size_t)B)) != CT_OK ||
        (s = o->to_host(be, stop, g.stop, sizeof(int32_t) * (size_t)B)) != CT_OK)
        goto done;
    for (int b = 0; b < B; b++) {
        if (count[b] < 1 || count[b] > budget || stop[b] == CT_STOP_NONE) {
            s = ct_fail(CT_ERR_INTERNAL, "generate: row %d ended with %d tokens, stop %d", b, count[b], stop[b]);
            goto done;
        }
        rows[b].tokens = malloc(sizeof(int32_t) * (size_t)budget);
        if (!rows[b].tokens) {
            s = ct_fail(CT_ERR_OOM, "generate: %d tokens per row", budget);
            goto done;
        }
        memcpy(rows[b].tokens, host + (size_t)b * budget, sizeof(int32_t) * (size_t)count[b]);
        rows[b].n_tokens = count[b];
        rows[b].stop = (ct_stop_reason)stop[b];
    }
done:
    if (exec) o->graph_free(be, exec);
    ct_arena_rewind(ws, mark);
    free(slot);
    free(host);
    if (s != CT_OK) ct_generate_rows_free(rows, B);
    return s;
}
