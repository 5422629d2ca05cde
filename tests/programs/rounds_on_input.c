/* Ends N rounds at once, says "ready", then one round per line read from stdin, saying "done"
 * after each (once its record is in the log); exits at the end of its input.
 *   rounds_on_input N */
#include <stdio.h>

#include "round_sync.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0, done = 0;
    for (; done < n; done++)
        if (end_round_and_wait(done) != 0)
            return 3;
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (end_round_and_wait(done++) != 0)
            return 4;
        printf("done %d\n", done);
        fflush(stdout);
    }
    return 0;
}
