/* render.h — txt, srt and vtt bytes of a file record (PRODUCT-DETAILS
 * §5.3–5.4). Pure: bytes into a ct_jbuf, no I/O. JSON is transcript_json.h.
 */
#ifndef CT_OUTPUT_RENDER_H
#define CT_OUTPUT_RENDER_H

#include "output/json.h"
#include "output/record.h"

/* Milliseconds of a timestamp: round-half-even(max(0, s) × 1000). */
long long ct_render_ms(double seconds);

/* "HH:MM:SS<m>mmm" when hours or hours > 0, else "MM:SS<m>mmm". */
void ct_render_timestamp(double seconds, int hours, char marker, char out[48]);

/* The transcript lines: every segment's stripped text, empty ones dropped
 * (the "transcript" JSON array and the txt lines). Appends one string per
 * line to arr when arr is non-NULL, and the txt bytes to txt when non-NULL. */
CT_NODISCARD ct_status ct_render_txt(const ct_file_record *r, ct_jbuf *out);
CT_NODISCARD ct_status ct_render_srt(const ct_file_record *r, ct_jbuf *out);
CT_NODISCARD ct_status ct_render_vtt(const ct_file_record *r, ct_jbuf *out);

/* The bytes of one format (txt/srt/vtt/json); json needs the run context
 * (transcript_json.h), passed through as ctx (may be NULL for the others). */
struct ct_output_context;
CT_NODISCARD ct_status ct_render_format(const ct_file_record *r, ct_format f, const ct_transcriber_options *o,
                                        const struct ct_output_context *ctx, ct_jbuf *out);

/* "txt", "srt", "vtt", "json". */
const char *ct_format_name(ct_format f);

#endif
