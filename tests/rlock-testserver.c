/* rlock-testserver - throwaway redis-servers for shell scripts (make demo).
 *
 *   build/rlock-testserver N < control-fifo > servers-file
 *
 * Starts N (1..9) redis-servers through tests/harness.h - each on a free
 * loopback port, in its own temp dir, without persistence - and prints one
 * line "PORT PID" per server, then "ready". It then waits for EOF on stdin
 * (the script closes its end of the FIFO, or died) and stops every server
 * that is still running, by PID, removing its temp dir. The servers die with
 * this process (PR_SET_PDEATHSIG), so nothing outlives a killed script. A
 * script may kill a server itself (kill -9 PID) to show a node failure.
 * Exit: 0, or 1 when a server did not start (the reason is on stderr). */
#include "harness.h" /* first: it sets the POSIX feature macros */

int main(int argc, char **argv) {
    rh_server s[9];
    char line[256];
    int n = argc == 2 ? atoi(argv[1]) : 0, i;
    if (n < 1 || n > 9) {
        fprintf(stderr, "usage: rlock-testserver N   (1..9 servers)\n");
        return 64;
    }
    for (i = 0; i < n; i++)
        if (rh_server_start(&s[i], NULL) != 0) {
            while (i-- > 0) rh_server_stop(&s[i]);
            return 1;
        }
    for (i = 0; i < n; i++) printf("%d %ld\n", s[i].port, (long)s[i].pid);
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) { } /* until EOF */
    for (i = 0; i < n; i++) rh_server_stop(&s[i]);
    return 0;
}
