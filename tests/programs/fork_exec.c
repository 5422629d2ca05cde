/* A multithreaded program that forks while its threads allocate: the child ends rounds of its
 * own, then execs a program; the parent ends rounds too. Prints the pids so a test can match the
 * records with the processes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "round_sync.h"

static volatile int stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        void *p[16];
        for (int i = 0; i < 16; i++)
            p[i] = malloc(64 + (size_t)i * 100);
        for (int i = 0; i < 16; i++)
            free(p[i]);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    if (end_round_and_wait(0) != 0)
        return 3;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        /* Only the forking thread exists here; allocation and rounds must keep working. */
        for (int i = 0; i < 100; i++)
            free(malloc(1000));
        if (end_round_and_wait(0) != 0 || end_round_and_wait(1) != 0)
            _exit(4);
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        execl("/bin/echo", "echo", "exec ok", (char *)NULL);
        _exit(5);
    }
    if (end_round_and_wait(1) != 0)
        return 3;
    int status = 0;
    waitpid(child, &status, 0);
    stop = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("parent %d child_status %d\n", (int)getpid(),
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
