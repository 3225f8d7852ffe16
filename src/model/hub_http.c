/* hub_http.c — one HTTP exchange with the Hub over libcurl, redirects followed
 * here rather than by curl (CURLOPT_FOLLOWLOCATION stays off) so that the
 * Authorization header is attached per hop and only when the hop's origin is
 * the endpoint's own. Retries and the meaning of statuses are the caller's
 * (hub.c); this file only moves bytes and collects headers. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/hub_internal.h"

#define CT_HTTP_BODY_CAP_DEFAULT (16u << 20)
#define CT_HTTP_ERRBODY_CAP (64u << 10)

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc = CURLE_OK;
static void curl_init_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

void ct_http_result_clear(ct_http_result *res) {
    free(res->body);
    memset(res, 0, sizeof *res);
    res->linked_size = res->content_length = res->range_start = res->range_total = -1;
}

ct_status ct_hub_check_cancel(const ct_hub *h) {
    if (h->o.cancel && *h->o.cancel) return ct_fail(CT_ERR_ABORTED, "download cancelled");
    return CT_OK;
}

int ct_hub_status_retryable(long status) {
    return status == 429 || (status >= 500 && status <= 599);
}

ct_status ct_hub_backoff(ct_hub *h, int attempt) {
    double d = h->o.backoff_s;
    for (int i = 0; i < attempt && d < 30.0; i++) d *= 2.0;
    if (d > 30.0) d = 30.0;
    /* sleep in small slices so that a cancel is seen promptly */
    double end = ct_now() + d;
    while (ct_now() < end) {
        CT_TRY(ct_hub_check_cancel(h));
        double left = end - ct_now();
        if (left > 0.05) left = 0.05;
        if (left > 0) {
            struct timespec ts = {0, (long)(left * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    return ct_hub_check_cancel(h);
}

int ct_hub_url_has_userinfo(const char *url) {
    CURLU *u = curl_url();
    if (!u) return 0;
    char *user = NULL, *pw = NULL;
    int has = 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        has = curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
              curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK;
    }
    curl_free(user);
    curl_free(pw);
    curl_url_cleanup(u);
    return has;
}

ct_status ct_hub_url_origin(const char *url, char *out, size_t cap) {
    CURLU *u = curl_url();
    if (!u) return ct_fail(CT_ERR_OOM, "cannot allocate a URL parser");
    char *scheme = NULL, *host = NULL, *port = NULL;
    ct_status st = CT_OK;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (uc == CURLUE_OK) uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (uc == CURLUE_OK) uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
    if (uc == CURLUE_OK) uc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (uc != CURLUE_OK) {
        /* the parser's reason ("Port number was not a decimal number between
         * 0 and 65535", ...); any user info in the URL is not repeated */
        const char *sep = strstr(url, "://"), *at = strchr(url, '@');
        if (sep && at && at > sep)
            st = ct_fail(CT_ERR_INVALID_ARG, "%.*s***%s: not a valid URL: %s", (int)(sep + 3 - url), url, at,
                         curl_url_strerror(uc));
        else
            st = ct_fail(CT_ERR_INVALID_ARG, "%s: not a valid URL: %s", url, curl_url_strerror(uc));
    } else {
        int n = snprintf(out, cap, "%s://%s:%s", scheme, host, port);
        if (n < 0 || (size_t)n >= cap) st = ct_fail(CT_ERR_LIMIT, "%s: URL too long", url);
        for (char *p = out; *p; p++) *p = (char)tolower((unsigned char)*p);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return st;
}

ct_status ct_hub_url_quote(const char *s, int keep_slash, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
                    (keep_slash && *p == '/');
        if (k + 4 > cap) return ct_fail(CT_ERR_LIMIT, "%s: too long for a URL", s);
        if (plain) {
            out[k++] = (char)*p;
        } else {
            out[k++] = '%';
            out[k++] = hex[*p >> 4];
            out[k++] = hex[*p & 15];
        }
    }
    out[k] = '\0';
    return CT_OK;
}

/* ---- one exchange -------------------------------------------------------- */

typedef struct xfer {
    ct_hub *h;
    const ct_http_request *req;
    ct_http_result *res;
    size_t body_cap;
    int body_overflow;
    int sink_ready;      /* the 2xx body may go to the file */
    int sink_error;      /* write to the file failed / range mismatch */
    char sink_why[160];
    int64_t base;        /* bytes already in the file before this exchange */
    double last_report;
} xfer;

static void copy_trim(char *dst, size_t cap, const char *v, size_t n) {
    while (n && isspace((unsigned char)*v)) v++, n--;
    while (n && isspace((unsigned char)v[n - 1])) n--;
    if (n >= cap) n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* ETag: W/"abc" or "abc" → abc, as huggingface_hub's _normalize_etag. */
static void normalise_etag(char *e) {
    char *s = e;
    if (s[0] == 'W' && s[1] == '/') s += 2;
    while (*s == '"') s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == '"') n--;
    memmove(e, s, n);
    e[n] = '\0';
}

static int64_t parse_i64(const char *v) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || x < 0) return -1;
    return (int64_t)x;
}

void ct_http_parse_header_line(ct_http_result *r, const char *buf, size_t len) {
    if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
        /* a new response on this handle (1xx interim responses come first) */
        /* curl's header buffer is not NUL-terminated: parse a bounded copy */
        char line[64];
        copy_trim(line, sizeof line, buf, len);
        const char *sp = strchr(line, ' ');
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->etag[0] = r->linked_etag[0] = r->repo_commit[0] = r->error_code[0] = '\0';
        r->error_message[0] = '\0';
        r->linked_size = r->content_length = r->range_start = r->range_total = -1;
        return;
    }
    const char *colon = memchr(buf, ':', len);
    if (!colon) return;
    size_t klen = (size_t)(colon - buf);
    const char *v = colon + 1;
    size_t vlen = len - klen - 1;
    char val[512];
    copy_trim(val, sizeof val, v, vlen);
#define IS(name) (klen == sizeof(name) - 1 && strncasecmp(buf, name, klen) == 0)
    if (IS("ETag")) {
        copy_trim(r->etag, sizeof r->etag, val, strlen(val));
        normalise_etag(r->etag);
    } else if (IS("X-Linked-Etag")) {
        copy_trim(r->linked_etag, sizeof r->linked_etag, val, strlen(val));
        normalise_etag(r->linked_etag);
    } else if (IS("X-Repo-Commit")) {
        copy_trim(r->repo_commit, sizeof r->repo_commit, val, strlen(val));
    } else if (IS("X-Error-Code")) {
        copy_trim(r->error_code, sizeof r->error_code, val, strlen(val));
    } else if (IS("X-Error-Message")) {
        copy_trim(r->error_message, sizeof r->error_message, val, strlen(val));
    } else if (IS("X-Linked-Size")) {
        r->linked_size = parse_i64(val);
    } else if (IS("Content-Length")) {
        r->content_length = parse_i64(val);
    } else if (IS("Content-Range")) {
        /* bytes START-END/TOTAL */
        long long a, b, t;
        if (sscanf(val, "bytes %lld-%lld/%lld", &a, &b, &t) == 3 && a >= 0 && b >= a) {
            r->range_start = a;
            r->range_total = t;
        }
    }
#undef IS
}

static size_t on_header(char *buf, size_t size, size_t n, void *user) {
    xfer *x = user;
    ct_http_parse_header_line(x->res, buf, size * n);
    return size * n;
}

static size_t on_body(char *buf, size_t size, size_t n, void *user) {
    xfer *x = user;
    ct_http_result *r = x->res;
    size_t len = size * n;
    int ok_status = r->status == 200 || r->status == 206;
    if (x->req->sink && ok_status) {
        if (!x->sink_ready) {
            x->sink_ready = 1;
            if (x->req->range_from > 0 && r->status == 206 && r->range_start != x->req->range_from) {
                snprintf(x->sink_why, sizeof x->sink_why,
                         "server resumed at byte %" PRId64 ", asked for %" PRId64, r->range_start,
                         x->req->range_from);
                x->sink_error = 1;
                return 0;
            }
            if (x->req->range_from > 0 && r->status == 200) {
                /* the server ignored Range: start the file again */
                if (fflush(x->req->sink) != 0 || ftruncate(fileno(x->req->sink), 0) != 0 ||
                    fseeko(x->req->sink, 0, SEEK_SET) != 0) {
                    snprintf(x->sink_why, sizeof x->sink_why, "cannot restart the file: %s",
                             strerror(errno));
                    x->sink_error = 1;
                    return 0;
                }
                x->base = 0;
            }
        }
        if (fwrite(buf, 1, len, x->req->sink) != len) {
            snprintf(x->sink_why, sizeof x->sink_why, "write failed: %s", strerror(errno));
            x->sink_error = 1;
            return 0;
        }
        r->written += (int64_t)len;
        return len;
    }
    if (r->status >= 300 && r->status < 400) return len; /* redirect bodies are noise */
    size_t cap = x->req->sink ? CT_HTTP_ERRBODY_CAP : x->body_cap;
    if (r->body_len + len > cap) {
        x->body_overflow = 1;
        if (!x->req->sink) return 0; /* an API answer that large is refused */
        return len;                  /* error pages: keep the head only */
    }
    char *nb = realloc(r->body, r->body_len + len + 1);
    if (!nb) return 0;
    r->body = nb;
    memcpy(r->body + r->body_len, buf, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return len;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
    (void)ultotal;
    (void)ulnow;
    xfer *x = user;
    if (x->h->o.cancel && *x->h->o.cancel) return 1;
    if (x->h->o.progress && x->req->sink && x->sink_ready) {
        double now = ct_now();
        if (now - x->last_report >= 0.1) {
            x->last_report = now;
            uint64_t total = x->req->progress_total ? x->req->progress_total
                                                    : (uint64_t)(dltotal > 0 ? dltotal + x->base : 0);
            x->h->o.progress(x->req->repo, x->req->display, (uint64_t)(x->base + dlnow), total,
                             x->h->o.progress_user);
        }
    }
    return 0;
}

static int net_retryable(CURLcode c) {
    switch (c) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

ct_status ct_hub_http(ct_hub *h, const ct_http_request *req, ct_http_result *res) {
    pthread_once(&g_curl_once, curl_init_once);
    if (g_curl_init_rc != CURLE_OK)
        return ct_fail(CT_ERR_NETWORK, "libcurl initialisation failed: %s",
                       curl_easy_strerror(g_curl_init_rc));
    ct_http_result_clear(res);
    CURL *c = curl_easy_init();
    if (!c) return ct_fail(CT_ERR_OOM, "cannot create a curl handle");

    char url[CT_HUB_URL_MAX];
    if (snprintf(url, sizeof url, "%s", req->url) >= (int)sizeof url) {
        curl_easy_cleanup(c);
        return ct_fail(CT_ERR_LIMIT, "URL too long: %.80s...", req->url);
    }
    int is_head = strcmp(req->method, "HEAD") == 0;
    xfer x = {.h = h, .req = req, .res = res,
              .body_cap = req->body_cap ? req->body_cap : CT_HTTP_BODY_CAP_DEFAULT};
    ct_status st = CT_OK;
    /* sized to the token: cut short, a long one would be refused as wrong */
    char *auth = NULL;
    if (h->token) {
        size_t an = sizeof "Authorization: Bearer " + strlen(h->token);
        if (!(auth = malloc(an))) {
            curl_easy_cleanup(c);
            return ct_fail(CT_ERR_OOM, "out of memory for the Authorization header");
        }
        snprintf(auth, an, "Authorization: Bearer %s", h->token);
    }

    for (int hop = 0;; hop++) {
        char origin[512];
        st = ct_hub_url_origin(url, origin, sizeof origin);
        if (st != CT_OK) break;
        int same_origin = strcmp(origin, h->origin) == 0;
        struct curl_slist *hdrs = NULL;
        hdrs = curl_slist_append(hdrs, "Accept-Encoding: identity");
        hdrs = curl_slist_append(hdrs, "User-Agent: cohere-transcribe/" CT_VERSION " (libcurl)");
        /* the one place the token leaves the process: only to the endpoint */
        if (same_origin && auth) hdrs = curl_slist_append(hdrs, auth);
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->o.connect_timeout_s);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->o.stall_timeout_s);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        if (is_head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        char range[48];
        if (!is_head && req->range_from > 0) {
            snprintf(range, sizeof range, "%" PRId64 "-", req->range_from);
            curl_easy_setopt(c, CURLOPT_RANGE, range);
        }
        x.base = req->range_from > 0 ? req->range_from : 0;
        x.sink_ready = 0;
        free(res->body);
        res->body = NULL;
        res->body_len = 0;
        /* res->url is for messages: drop the query, which on CDN URLs is a signature */
        snprintf(res->url, sizeof res->url, "%.*s", (int)strcspn(url, "?#"), url);
        CURLcode rc = curl_easy_perform(c);
        curl_slist_free_all(hdrs);
        if (rc != CURLE_OK) {
            if (rc == CURLE_ABORTED_BY_CALLBACK) {
                st = ct_fail(CT_ERR_ABORTED, "download cancelled");
            } else if (rc == CURLE_WRITE_ERROR && x.sink_error) {
                st = ct_fail(CT_ERR_IO, "%s: %s", req->display ? req->display : url, x.sink_why);
            } else if (rc == CURLE_WRITE_ERROR && x.body_overflow) {
                st = ct_fail(CT_ERR_LIMIT, "%s: response larger than %zu bytes", res->url, x.body_cap);
            } else {
                res->net_error = net_retryable(rc) ? CT_NET_RETRY : 0;
                long os_errno = 0;
                if (rc == CURLE_COULDNT_CONNECT && curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK &&
                    os_errno == ECONNREFUSED)
                    res->net_error = CT_NET_REFUSED;
                snprintf(res->net_message, sizeof res->net_message, "%s", curl_easy_strerror(rc));
                st = ct_fail(CT_ERR_NETWORK, "%s: %s", res->url, curl_easy_strerror(rc));
            }
            break;
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
        if (res->status >= 300 && res->status < 400 && res->status != 304) {
            char *loc = NULL;
            curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
            if (!loc || !*loc) {
                st = ct_fail(CT_ERR_NETWORK, "%s: redirect (HTTP %ld) without a Location", res->url,
                             res->status);
                break;
            }
            /* cut short, a signed URL is another URL (and fails as if forbidden) */
            if (strlen(loc) >= sizeof res->location) {
                st = ct_fail(CT_ERR_LIMIT, "redirect URL too long (%zu bytes, limit %zu) from %.200s",
                             strlen(loc), sizeof res->location - 1, res->url);
                break;
            }
            snprintf(res->location, sizeof res->location, "%s", loc);
            char lorigin[512];
            st = ct_hub_url_origin(res->location, lorigin, sizeof lorigin);
            if (st != CT_OK) break;
            if (!req->cross_origin && strcmp(lorigin, h->origin) != 0) break; /* caller reads it */
            if (hop + 1 > CT_HUB_MAX_REDIRECTS) {
                st = ct_fail(CT_ERR_NETWORK, "%s: more than %d redirects", req->url,
                             CT_HUB_MAX_REDIRECTS);
                break;
            }
            CT_LOGD("hub: %s %s → HTTP %ld → %.*s", req->method, res->url, res->status,
                    (int)strcspn(res->location, "?#"), res->location);
            snprintf(url, sizeof url, "%s", res->location);
            continue;
        }
        res->location[0] = '\0';
        break;
    }
    curl_easy_cleanup(c);
    free(auth);
    return st;
}
