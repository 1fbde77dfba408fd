// SPDX-License-Identifier: GPL-2.0-only
/* execstorm.c - the hostile round's exec storm: for argv[1] seconds, as many short-lived
 * processes as fork + exec of /bin/true give, from two forkers. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long secs = argc > 1 ? strtol(argv[1], NULL, 10) : 10, n = 0;
	time_t end = time(NULL) + secs;
	char *args[] = {"true", NULL};

	fork(); /* two forkers */
	while (time(NULL) < end) {
		pid_t p = fork();

		if (p == 0) {
			execv("/bin/true", args);
			_exit(127);
		}
		if (p > 0) {
			waitpid(p, NULL, 0);
			n++;
		}
	}
	fprintf(stderr, "%ld execs in %ld s\n", n, secs);
	return 0;
}
