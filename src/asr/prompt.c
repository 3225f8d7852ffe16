/* prompt.c — the decoder prompt of a clip, built in one place for the CPU
 * and GPU paths, with the language checked against the model's languages:
 * the config's supported_languages when it has any, else the tokenizer's
 * language tokens. Looking <|X|> up in the vocabulary alone accepted any
 * special token ("pnc", "itn", "nospeech") as a language. */
#include <stdio.h>
#include <string.h>

#include "asr/asr.h"

static void config_list(const ct_model_config *cfg, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < cfg->n_languages && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? "," : "", cfg->languages[i]);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}

ct_status ct_asr_language_check(const ct_model_config *cfg, const ct_tokenizer *tok, const char *lang) {
    if (!lang || !*lang) return ct_fail(CT_ERR_INVALID_ARG, "language: empty");
    char list[1024];
    if (cfg && cfg->n_languages > 0) {
        if (ct_config_language_index(cfg, lang) < 0) {
            config_list(cfg, list, sizeof list);
            return ct_fail(CT_ERR_INVALID_ARG, "unsupported language \"%.32s\": the model's languages are %s", lang,
                           list);
        }
        char piece[48];
        snprintf(piece, sizeof piece, "<|%s|>", lang);
        if (tok && ct_tokenizer_id(tok, piece) < 0)
            return ct_fail(CT_ERR_FORMAT, "language \"%s\": the config lists it but the tokenizer has no %s", lang,
                           piece);
        return CT_OK;
    }
    if (!ct_tokenizer_is_language(tok, lang)) {
        ct_tokenizer_languages(tok, list, sizeof list);
        return ct_fail(CT_ERR_INVALID_ARG, "unsupported language \"%.32s\": the model's languages are %s", lang,
                       list[0] ? list : "none");
    }
    return CT_OK;
}

ct_status ct_asr_check_language(const ct_asr *asr, const char *lang) {
    if (!asr) return ct_fail(CT_ERR_INVALID_ARG, "language check: NULL model");
    return ct_asr_language_check(ct_asr_config(asr), ct_asr_tokenizer(asr), lang);
}

ct_status ct_asr_prompt(const ct_model_config *cfg, const ct_tokenizer *tok, const char *lang, int punctuation,
                        int32_t *ids, int cap, int *n) {
    *n = 0;
    CT_TRY(ct_asr_language_check(cfg, tok, lang));
    return ct_tokenizer_prompt(tok, lang, punctuation, ids, cap, n);
}
