/* empty.c — the one source of the shared library target: every object comes
 * whole from the static library (CMakeLists.txt, "the shared library"). */
typedef int ct_shared_library_has_no_own_code;
