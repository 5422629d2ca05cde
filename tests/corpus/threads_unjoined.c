/* truth: outside_heap
 * Each round starts two threads that touch 512 KiB of their own stacks and then wait forever:
 * never joined, their stacks stay resident (thread stacks are mappings, not the heap). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

void roundtrim_round_end(void) __attribute__((weak));

static void *park(void *arg)
{
    (void)arg;
    volatile char frame[512 << 10];
    memset((char *)frame, 1, sizeof frame);
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 2 << 20);
    for (int r = 0; r < 24; r++) {
        for (int i = 0; i < 2; i++) {
            pthread_t t;
            pthread_create(&t, &attr, park, NULL);
            pthread_detach(t);
        }
        usleep(20000);
        if (roundtrim_round_end)
            roundtrim_round_end();
    }
    return 0;
}
