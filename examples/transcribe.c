/* transcribe.c — the smallest complete use of libcohere_transcribe: transcribe
 * the files or folders named on the command line with the default options
 * (outputs beside the audio) and print each file's text.
 *
 *   cc transcribe.c $(pkg-config --cflags --libs cohere-transcribe) -o transcribe
 *   ./transcribe --model DIR talk.mp3 lectures/
 */
#include <stdio.h>
#include <string.h>

#include <cohere_transcribe.h>

int main(int argc, char **argv) {
    ct_transcriber_options o = ct_transcriber_default_options();
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--model")) {
        o.model = argv[2];
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: %s [--model DIR|OWNER/NAME] AUDIO...\n", argv[0]);
        return 2;
    }
    o.existing = CT_EXISTING_OVERWRITE;
    ct_transcriber *t;
    if (ct_transcriber_create(&o, &t) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    ct_run *run = NULL;
    ct_status s = ct_transcriber_run(t, (const char *const *)argv + first, (size_t)(argc - first), &run);
    if (s != CT_OK) fprintf(stderr, "%s\n", ct_transcriber_errmsg(t));
    for (size_t i = 0; i < ct_run_file_count(run); i++) {
        const ct_file_result *f = ct_run_file(run, i);
        if (ct_file_get_status(f) == CT_FILE_FAILED)
            printf("%s: failed: %s\n", ct_file_path(f), ct_file_error(f));
        else
            printf("%s:\n%s\n", ct_file_path(f), ct_file_text(f));
    }
    ct_run_stats st;
    ct_run_get_stats(run, &st);
    printf("%d completed, %d failed, %.1f s of audio at %.1fx real time\n", st.files_completed, st.files_failed,
           st.audio_seconds, st.rtfx);
    ct_run_free(run);
    ct_transcriber_free(t);
    return s == CT_OK && st.files_failed == 0 ? 0 : 1;
}
