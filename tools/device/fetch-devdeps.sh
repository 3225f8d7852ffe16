#!/bin/bash
# fetch-devdeps.sh — download (here, with apt-get) the Debian 12 packages the
# device build needs but the device image lacks, into build-devdeps/ (ignored;
# tools/device/sync.sh carries them): cmocka and jansson for the tests and the
# random-model tool, and for the product path (cohere-transcribe-inspect
# --device cuda) libsndfile, OpenBLAS (OpenMP), libcurl, OpenSSL with their
# runtime libraries. Debian 12's glibc (2.36) is older than the device's
# Ubuntu 24.04 (2.39), so these libraries load there. ~27 MB. With utf8proc
# and libsamplerate the whole CMake build (CT_FFMPEG=OFF) runs there too:
# tools/device/product.sh.
set -euo pipefail
dst=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)/build-devdeps
mkdir -p "$dst" && cd "$dst"
apt-get download libcmocka-dev libcmocka0 libjansson-dev libjansson4 \
  libsndfile1-dev libsndfile1 libflac12 libvorbis0a libvorbisenc2 libopus0 libogg0 libmpg123-0 libmp3lame0 \
  libopenblas-openmp-dev libopenblas0-openmp libopenblas-dev libgfortran5 libquadmath0 \
  libcurl4-openssl-dev libcurl4 libnghttp2-14 librtmp1 libssh2-1 libpsl5 libbrotli1 libldap-2.5-0 libsasl2-2 \
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2 libssl-dev libssl3 \
  libidn2-0 libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0 libtasn1-6 libffi8 libzstd1 zlib1g \
  libutf8proc-dev libutf8proc2 libsamplerate0-dev libsamplerate0
ls | wc -l
