#!/bin/bash
# devdeps_env.sh — sourced by device scripts (product.sh, product_bench.sh):
# unpacks the Debian 12 packages carried in build-devdeps/
# (tools/device/fetch-devdeps.sh) under /tmp/devdeps and points pkg-config and
# the loader at them, so the CMake build finds jansson, libsndfile (+ its
# codecs), libsamplerate, OpenBLAS, libcurl, OpenSSL and utf8proc there. Sets
# DEVDEPS_LINK: the linker flags (rpaths) for cmake -DCMAKE_EXE_LINKER_FLAGS.
D=/tmp/devdeps
rm -rf "$D" && mkdir -p "$D"
for d in build-devdeps/*.deb; do dpkg -x "$d" "$D"; done
A=$D/usr/lib/x86_64-linux-gnu
O=$A/openblas-openmp
ln -sf "$(ls $O/libopenblasp-r*.so | head -1)" "$O/libopenblas.so.0"
ln -sf libopenblas.so.0 "$O/libopenblas.so"
# Requires.private names the codecs' own .pc files, which only a static link
# needs and the carried set does not have: drop those lines
sed -i '/^Requires.private/d' "$A"/pkgconfig/*.pc
export PKG_CONFIG_SYSROOT_DIR=$D
export PKG_CONFIG_PATH=$A/pkgconfig:$O/pkgconfig:$D/usr/share/pkgconfig
export PKG_CONFIG_LIBDIR=$PKG_CONFIG_PATH
export LD_LIBRARY_PATH=$A:$O${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DEVDEPS_LINK="-Wl,-rpath,$A -Wl,-rpath,$O -Wl,-rpath-link,$A"
