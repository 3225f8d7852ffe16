/* doctor_internal.h — shared by doctor.c and doctor_model.c: formatted
 * result lines and where the Silero weights are. Not for other modules. */
#ifndef CT_PIPELINE_DOCTOR_INTERNAL_H
#define CT_PIPELINE_DOCTOR_INTERNAL_H

#include <stddef.h>

#include "core/error.h"
#include "pipeline/doctor.h"

/* One result line, printf-style (cut at 4 KiB). */
void ct_doctor_say(ct_doctor_report_fn fn, void *user, ct_doctor_level lv, const char *fmt, ...) CT_PRINTF(4, 5);

/* The Silero weights the product would use: the option, else
 * $CT_VAD_WEIGHTS, $CT_SILERO_VAD (a file, a folder holding
 * silero_vad.onnx, or a Hub repo, fetched), else ct_silero_default_path.
 * *from names the source. CT_OK may name a path that does not exist (an
 * option or variable pointing nowhere): the caller reports it missing. */
ct_status ct_doctor_silero_path(const ct_doctor_options *o, char *buf, size_t cap, const char **from);

#endif
