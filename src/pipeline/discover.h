/* discover.h — input discovery (PRODUCT-DETAILS §12 "Discovery"): the
 * paths a user named become an ordered, de-duplicated list of audio files,
 * each with its canonical path and the relative path that decides where its
 * outputs go. Nothing is opened: files are only stat'ed, so a FIFO or a
 * device named on the command line is refused without blocking on it.
 *
 * Also the two path helpers planning shares: Ruby-style expansion ("~",
 * absolute, lexically cleaned) and resolution of a path whose tail may not
 * exist yet. */
#ifndef CT_PIPELINE_DISCOVER_H
#define CT_PIPELINE_DISCOVER_H

#include <stddef.h>

#include "core/error.h"

typedef struct ct_input_file {
    char *path;     /* canonical realpath (absolute) */
    char *relative; /* explicit file: its basename; found in a directory: the path
                     * below that directory's realpath (sub-folders kept, the
                     * entry's own name, which for a symlink is the link's) */
} ct_input_file;

typedef struct ct_input_list {
    ct_input_file *files;
    size_t n;
} ct_input_list;

/* Expand the user's inputs, in order:
 *  - n == 0: "audio must contain at least one path"; an entry that is empty
 *    or only white space: "audio[i] must not be empty"; not UTF-8:
 *    "audio[i] path must contain valid UTF-8" (all CT_ERR_INVALID_ARG);
 *  - each entry is expanded (ct_path_expand) and resolved with realpath:
 *    missing → CT_ERR_NOT_FOUND "Input does not exist: <expanded>"; a loop →
 *    "Invalid input path \"<raw>\": Symlink loop"; other errors
 *    "Invalid input path \"<raw>\": <strerror>";
 *  - a regular file is taken whatever its extension; a directory is walked
 *    (recursive: every depth, never into symlinked directories, symlinks to
 *    regular files included; else its immediate entries) for the audio
 *    extensions of ct_is_audio_name, sorted by Unicode case-folded full
 *    path (byte order breaks ties); walk errors are CT_ERR_IO
 *    "Cannot inspect input <dir>: <strerror>"; a found name that is not
 *    UTF-8 is "Input path must contain valid UTF-8: <path, bad bytes as \xNN>";
 *  - anything else (FIFO, socket, device): CT_ERR_INVALID_ARG
 *    "Input is not a regular file or directory: <canonical>";
 *  - de-duplicated by canonical path, the first occurrence wins;
 *  - nothing at all: CT_ERR_NOT_FOUND "No audio files found in the supplied inputs."
 * On failure *out is empty. */
ct_status ct_discover_inputs(const char *const *paths, size_t n, int recursive, ct_input_list *out);
void ct_input_list_free(ct_input_list *l);

/* 1 if a directory entry's name has one of the audio extensions (.aac .aif
 * .aiff .alac .flac .m4a .mp3 .mp4 .oga .ogg .opus .wav .wave .webm .wma,
 * any case); a dot-file such as ".wav" has no extension. */
int ct_is_audio_name(const char *name);

/* The extension of a base name as Ruby's File.extname sees it: leading dots
 * skipped, then from the last '.'; NULL when there is none. "a.b.wav" →
 * ".wav", ".wav" → NULL. */
const char *ct_path_extname(const char *base);

/* Ruby's File.expand_path: "~" and "~/x" use $HOME, a relative path is
 * joined to the working directory, then ".", ".." and repeated or trailing
 * slashes are removed lexically. Fresh string in *out. */
ct_status ct_path_expand(const char *raw, char **out);

/* realpath of an absolute path whose tail may be missing: the longest
 * existing prefix is resolved and the missing components are appended
 * (lexically). ELOOP is CT_ERR_INVALID_ARG "Symlink loop"; other errors
 * CT_ERR_IO with strerror (no path: callers add it). */
ct_status ct_path_resolve_loose(const char *abs, char **out);

/* 1 if s is valid UTF-8 (no surrogates, no overlong forms). */
int ct_utf8_valid(const char *s);

/* Unicode full case folding of s (utf8proc, UTF8PROC_CASEFOLD), fresh
 * string; NULL when s is not UTF-8 or memory ran out. */
char *ct_utf8_casefold(const char *s);

#endif
