# devdeps-env.sh — sourced by the device scripts (product.sh, gpu_tests.sh):
# unpacks the Debian 12 -dev packages carried in build-devdeps/
# (tools/device/fetch-devdeps.sh) under /tmp/devdeps and points pkg-config,
# the linker and the loader at them, so the CMake build users build runs on
# the GPU machine's image. Sets DEVDEPS_LDFLAGS for cmake's linker flags.
D=/tmp/devdeps
rm -rf "$D" && mkdir -p "$D"
for d in ${DEVDEPS_DIR:-build-devdeps}/*.deb; do dpkg -x "$d" "$D"; done
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
DEVDEPS_LDFLAGS="-Wl,-rpath,$A -Wl,-rpath,$O -Wl,-rpath-link,$A"
