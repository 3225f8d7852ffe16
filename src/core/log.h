/* log.h — leveled logging through the replaceable sink of ct_log_set().
 * Library code logs with CT_LOGW/CT_LOGI/CT_LOGD; it never prints directly. */
#ifndef CT_CORE_LOG_H
#define CT_CORE_LOG_H

#include "core/error.h"

void ct_log(ct_log_level level, const char *fmt, ...) CT_PRINTF(2, 3);
int ct_log_enabled(ct_log_level level);

#define CT_LOGE(...) ct_log(CT_LOG_ERROR, __VA_ARGS__)
#define CT_LOGW(...) ct_log(CT_LOG_WARN, __VA_ARGS__)
#define CT_LOGI(...) ct_log(CT_LOG_INFO, __VA_ARGS__)
#define CT_LOGD(...) ct_log(CT_LOG_DEBUG, __VA_ARGS__)

#endif
