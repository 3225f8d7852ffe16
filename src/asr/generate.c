/* generate.c — greedy decoding loop: prompt step, then one token per active
 * row; rows that stop are dropped from the slot list so later steps only
 * compute the rows still running. The same loop with its state on the
 * device, replayed as a graph, is generate_dev.c (chosen here). */
#include "asr/generate.h"

#include <stdlib.h>
#include <string.h>

#include "asr/generate_dev.h"
#include "compute/ops.h"

const char *ct_stop_reason_name(ct_stop_reason r) {
    switch (r) {
    case CT_STOP_EOS: return "eos";
    case CT_STOP_MAX_TOKENS: return "max_new_tokens";
    case CT_STOP_POSITIONS: return "max_positions";
    default: return "none";
    }
}

int ct_generate_cache_positions(const ct_asr_hparams *hp, int prompt_len, int max_new_tokens) {
    long n = (long)prompt_len + max_new_tokens;
    return n > hp->max_pos ? hp->max_pos : (int)n;
}

size_t ct_generate_ws_bytes(const ct_asr_hparams *hp, int B, int max_new_tokens) {
    size_t n = (size_t)B, t = (size_t)(max_new_tokens > 0 ? max_new_tokens : 1);
    /* logits (B, V) f32; ids, tokens, count, stop, forced, row budgets,
     * pos, active: int32; each allocation rounded to the arena alignment */
    return sizeof(float) * n * (size_t)hp->vocab + sizeof(int32_t) * (2 * n * t + 4 * n + 2) + 12 * CT_ARENA_ALIGN;
}

void ct_generate_rows_free(ct_generate_row *rows, int B) {
    if (!rows) return;
    for (int b = 0; b < B; b++) {
        free(rows[b].tokens);
        free(rows[b].logits);
        memset(&rows[b], 0, sizeof rows[b]);
    }
}

ct_status ct_generate_greedy(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                             const int32_t *prompts, int P, const ct_generate_options *opts, ct_generate_row *rows) {
    const int B = st->slots, V = w->hp.vocab;
    if (P <= 0 || P >= st->Smax || P >= w->hp.max_pos)
        return ct_fail(CT_ERR_INVALID_ARG, "generate: prompt of %d tokens (positions %d)", P, st->Smax);
    if (opts->max_new_tokens <= 0) return ct_fail(CT_ERR_INVALID_ARG, "generate: max_new_tokens %d", opts->max_new_tokens);
    /* a row may generate until prompt + tokens fills the cache/position table */
    int cap = st->Smax - P + 1; /* the last token need not be fed back */
    if (cap > w->hp.max_pos - P) cap = w->hp.max_pos - P;
    int budget = opts->max_new_tokens < cap ? opts->max_new_tokens : cap;
    ct_stop_reason at_budget = opts->max_new_tokens <= cap ? CT_STOP_MAX_TOKENS : CT_STOP_POSITIONS;
    if (opts->row_max_new_tokens)
        for (int b = 0; b < B; b++)
            if (opts->row_max_new_tokens[b] < 1 || opts->row_max_new_tokens[b] > opts->max_new_tokens)
                return ct_fail(CT_ERR_INVALID_ARG, "generate: row %d budget %d (1..%d)", b, opts->row_max_new_tokens[b],
                               opts->max_new_tokens);
    memset(rows, 0, sizeof *rows * (size_t)B);
    if (opts->loop < CT_LOOP_AUTO || opts->loop > CT_LOOP_DEVICE_EAGER)
        return ct_fail(CT_ERR_INVALID_ARG, "generate: loop %d", opts->loop);
    int dev = opts->loop == CT_LOOP_DEVICE || opts->loop == CT_LOOP_DEVICE_EAGER ||
              (opts->loop == CT_LOOP_AUTO && !opts->keep_logits && ct_backend_has_device_steps(be) &&
               ct_backend_has_graphs(be));
    if (dev)
        return ct_generate_greedy_dev(w, be, st, ws, prompts, P, opts, budget, at_budget,
                                      opts->loop != CT_LOOP_DEVICE_EAGER, rows);
    ct_status s = CT_OK;
    int *slot = malloc(sizeof(int) * (size_t)B);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)B * P), *next = malloc(sizeof(int32_t) * (size_t)B);
    size_t mark = ct_arena_mark(ws);
    float *logits = ct_arena_alloc(ws, sizeof(float) * (size_t)B * V);
    if (!slot || !ids || !next || !logits) {
        s = logits ? ct_fail(CT_ERR_OOM, "generate: buffers") : ct_fail_wrap(CT_ERR_OOM, "generate: logits");
        goto done;
    }
    for (int b = 0; b < B; b++) {
        slot[b] = b;
        rows[b].tokens = malloc(sizeof(int32_t) * (size_t)budget);
        if (opts->keep_logits) rows[b].logits = malloc(sizeof(float) * (size_t)budget * V);
        if (!rows[b].tokens || (opts->keep_logits && !rows[b].logits)) {
            s = ct_fail(CT_ERR_OOM, "generate: %d tokens per row", budget);
            goto done;
        }
    }
    memcpy(ids, prompts, sizeof(int32_t) * (size_t)B * P);
    int n = B, S = P, pos0 = 0;
    while (n > 0) {
        s = ct_decoder_step(w, be, st, ws, ids, slot, n, S, pos0, logits);
        if (s != CT_OK) goto done;
        s = ct_op_argmax(be, next, ct_buf_f32(logits), n, V);
        if (s != CT_OK) goto done;
        pos0 += S;
        S = 1;
        int kept = 0;
        for (int r = 0; r < n; r++) {
            ct_generate_row *row = &rows[slot[r]];
            row->tokens[row->n_tokens] = next[r];
            if (opts->keep_logits) { /* straight into the row's slot: one copy, no host staging */
                s = be->ops->to_host(be, row->logits + (size_t)row->n_tokens * V, logits + (size_t)r * V,
                                     sizeof(float) * (size_t)V);
                if (s != CT_OK) goto done;
            }
            row->n_tokens++;
            if (next[r] == opts->eos_id && !opts->ignore_eos && !opts->forced) row->stop = CT_STOP_EOS;
            else if (row->n_tokens >= budget) row->stop = at_budget;
            else if (opts->row_max_new_tokens && row->n_tokens >= opts->row_max_new_tokens[slot[r]])
                row->stop = CT_STOP_MAX_TOKENS;
            if (row->stop == CT_STOP_NONE) { /* stays: feed its token (or the forced one) next step */
                slot[kept] = slot[r];
                ids[kept] = opts->forced
                                ? opts->forced[(size_t)slot[r] * opts->max_new_tokens + (size_t)row->n_tokens - 1]
                                : next[r];
                kept++;
            }
        }
        n = kept;
    }
done:
    ct_arena_rewind(ws, mark);
    free(slot);
    free(ids);
    free(next);
    if (s != CT_OK) ct_generate_rows_free(rows, B);
    return s;
}
