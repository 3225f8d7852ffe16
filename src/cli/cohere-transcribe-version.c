/* cohere-transcribe-version — prints the library version and build features.
 * A placeholder for the main `cohere-transcribe` command, which the pipeline
 * issue adds; this one exists so the quick start can show a working build. */
#include <stdio.h>

#include "cohere_transcribe.h"

int main(void) {
    printf("cohere-transcribe %s\n", ct_version());
    printf("cuda: %s\n", ct_have_cuda() ? "compiled in" : "not compiled in");
    return 0;
}
