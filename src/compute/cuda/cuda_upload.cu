/* cuda_upload.cu — the "cuda" table's to_device_async (backend.h version 7):
 * weight uploads in the background, for sources that stay put until the
 * next synchronize (a checkpoint's mapping).
 *
 * Why: a model load uploads ~700 tensors, 4.1 GB for the full model in
 * bf16. to_device copies a pageable source through two pinned buffers, each
 * 8 MB chunk split over threads started for that chunk and joined before
 * its DMA: ~500 joins per load. In the product the load runs beside the
 * preparation workers, which keep every core busy, and a join waits for
 * the last of its threads to get a core: the weights took 2.2 s of a 2.7 s
 * load there against ~0.9 s alone (docs/PERFORMANCE.md, "Session 10").
 * Here a few long-lived threads each own two pinned buffers and a stream
 * and take pieces from one queue; nothing waits until the caller
 * synchronizes, so a thread that loses its core delays only its own piece.
 *
 * Ordering: the pieces travel on the uploader's streams, not the backend's,
 * so until it has drained (ct_cuda_upload_drain: every piece copied and its
 * DMA complete) the destinations must not be read. The table's synchronize,
 * copy, to_host, to_device and free drain it first (cuda_backend.cu); a
 * kernel launched on a destination before that would race, which backend.h
 * states as the entry's contract.
 */
#include <stdlib.h>
#include <string.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "compute/cuda/cuda_be.h"

namespace {
struct piece {
    char *dst;
    const char *src;
    size_t n;
};
struct lane { /* one thread's pinned buffers, their events and its stream */
    void *buf[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
};
} // namespace

struct ct_cuda_uploader {
    int device = 0;
    std::mutex mu;
    std::condition_variable work, idle;
    std::deque<piece> queue;
    int busy = 0;      /* threads between taking a piece and their stream's completion */
    bool stop = false;
    char err[256] = ""; /* the first failure; reported by the drain */
    std::vector<lane> lanes;
    std::vector<std::thread> threads;
};

/* Pieces of at most this size; two per thread in flight. */
enum { PIECE_BYTES = 4 << 20 };

static void fail_once(ct_cuda_uploader *u, const char *what, cudaError_t e) {
    std::lock_guard<std::mutex> lk(u->mu);
    if (!u->err[0]) snprintf(u->err, sizeof u->err, "cuda upload: %s: %s", what, cudaGetErrorString(e));
}

static void run_lane(ct_cuda_uploader *u, lane *ln) {
    if (cudaSetDevice(u->device) != cudaSuccess) { /* the device is current per thread */
        fail_once(u, "cudaSetDevice", cudaGetLastError());
    }
    int k = 0;
    bool dirty = false; /* copies queued on this lane's stream since it last completed */
    std::unique_lock<std::mutex> lk(u->mu);
    for (;;) {
        if (!u->queue.empty()) {
            piece p = u->queue.front();
            u->queue.pop_front();
            if (!dirty) dirty = true, u->busy++;
            bool failed = u->err[0] != 0;
            lk.unlock();
            cudaError_t e = cudaSuccess;
            if (!failed) { /* after a failure the rest is dropped: the drain reports it */
                e = cudaEventSynchronize(ln->done[k]); /* this buffer's previous DMA has left */
                if (e == cudaSuccess) {
                    memcpy(ln->buf[k], p.src, p.n);
                    e = cudaMemcpyAsync(p.dst, ln->buf[k], p.n, cudaMemcpyHostToDevice, ln->stream);
                }
                if (e == cudaSuccess) e = cudaEventRecord(ln->done[k], ln->stream);
                if (e != cudaSuccess) fail_once(u, "copy", e);
                k ^= 1;
            }
            lk.lock();
            continue;
        }
        if (dirty) { /* the queue is empty: wait for this lane's DMAs, then count it idle */
            lk.unlock();
            cudaError_t e = cudaStreamSynchronize(ln->stream);
            if (e != cudaSuccess) fail_once(u, "stream", e);
            lk.lock();
            dirty = false;
            if (--u->busy == 0 && u->queue.empty()) u->idle.notify_all();
            continue;
        }
        if (u->stop) break;
        u->work.wait(lk);
    }
}

static void destroy(ct_cuda_uploader *u) {
    {
        std::lock_guard<std::mutex> lk(u->mu);
        u->stop = true;
    }
    u->work.notify_all();
    for (auto &t : u->threads) t.join();
    for (auto &ln : u->lanes) {
        for (int i = 0; i < 2; i++) {
            if (ln.done[i]) cudaEventDestroy(ln.done[i]);
            ct_cuda_host_free(ln.buf[i]);
        }
        if (ln.stream) cudaStreamDestroy(ln.stream);
    }
    delete u;
}

/* Threads: half the cores, 2..8. Each copies ~5–10 GB/s alone; the DMA
 * takes ~25 GB/s; more threads keep a share of a busy machine. */
static ct_status create(ct_cuda *c, ct_cuda_uploader **out) {
    ct_cuda_uploader *u = new (std::nothrow) ct_cuda_uploader;
    if (!u) return ct_fail(CT_ERR_OOM, "cuda upload");
    u->device = c->device;
    unsigned hw = std::thread::hardware_concurrency();
    int n = (int)(hw / 2);
    n = n < 2 ? 2 : n > 8 ? 8 : n;
    try {
        u->lanes.resize((size_t)n);
    } catch (...) {
        delete u;
        return ct_fail(CT_ERR_OOM, "cuda upload");
    }
    ct_status s = CT_OK;
    for (auto &ln : u->lanes) {
        if (s == CT_OK && cudaStreamCreateWithFlags(&ln.stream, cudaStreamNonBlocking) != cudaSuccess)
            s = ct_fail(CT_ERR_DEVICE, "cuda upload: stream: %s", cudaGetErrorString(cudaGetLastError()));
        for (int i = 0; i < 2 && s == CT_OK; i++) {
            if ((s = ct_cuda_host_alloc(&ln.buf[i], PIECE_BYTES)) != CT_OK) break;
            if (cudaEventCreateWithFlags(&ln.done[i], cudaEventDisableTiming) != cudaSuccess)
                s = ct_fail(CT_ERR_DEVICE, "cuda upload: event");
        }
    }
    for (size_t i = 0; s == CT_OK && i < u->lanes.size(); i++) {
        try {
            u->threads.emplace_back(run_lane, u, &u->lanes[i]);
        } catch (...) {
            if (i == 0) s = ct_fail(CT_ERR_OOM, "cuda upload: no thread");
            break; /* fewer threads: the queue is shared */
        }
    }
    if (s != CT_OK) {
        destroy(u);
        return s;
    }
    *out = u;
    return CT_OK;
}

extern "C" ct_status ct_cuda_upload_async(ct_cuda_uploader **slot, ct_cuda *c, void *dst, const void *src,
                                          size_t bytes) {
    if (!bytes) return CT_OK;
    if (!*slot) CT_TRY(create(c, slot));
    ct_cuda_uploader *u = *slot;
    {
        std::lock_guard<std::mutex> lk(u->mu);
        try {
            for (size_t off = 0; off < bytes; off += PIECE_BYTES)
                u->queue.push_back({(char *)dst + off, (const char *)src + off,
                                    bytes - off < PIECE_BYTES ? bytes - off : (size_t)PIECE_BYTES});
        } catch (...) {
            return ct_fail(CT_ERR_OOM, "cuda upload: queue");
        }
    }
    u->work.notify_all();
    return CT_OK;
}

extern "C" int ct_cuda_upload_pending(const ct_cuda_uploader *u) {
    if (!u) return 0;
    std::lock_guard<std::mutex> lk(const_cast<ct_cuda_uploader *>(u)->mu);
    return !u->queue.empty() || u->busy > 0;
}

extern "C" ct_status ct_cuda_upload_drain(ct_cuda_uploader *u) {
    if (!u) return CT_OK;
    std::unique_lock<std::mutex> lk(u->mu);
    u->idle.wait(lk, [u] { return u->queue.empty() && u->busy == 0; });
    if (u->err[0]) {
        ct_status s = ct_fail(CT_ERR_DEVICE, "%s", u->err);
        u->err[0] = 0;
        return s;
    }
    return CT_OK;
}

extern "C" void ct_cuda_upload_free(ct_cuda_uploader *u) {
    if (!u) return;
    (void)ct_cuda_upload_drain(u);
    destroy(u);
}
