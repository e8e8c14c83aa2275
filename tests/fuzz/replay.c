/* Runs a libFuzzer target's LLVMFuzzerTestOneInput over files and folders
 * (the seed corpus) without libFuzzer, so ctest exercises every target with
 * any compiler. Usage: <target>_replay PATH... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, r;
	if (!fp) {
		perror(path);
		return -1;
	}
	do {
		if (n == cap) {
			uint8_t *nb;
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(fp);
				return -1;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
	} while (r > 0);
	fclose(fp);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int run_path(const char *path, int *count)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		struct dirent **names;
		int i, n = scandir(path, &names, NULL, alphasort), rc = 0;
		if (n < 0) {
			perror(path);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (names[i]->d_name[0] != '.' && rc == 0) {
				char *p = malloc(strlen(path) + strlen(names[i]->d_name) + 2);
				if (!p)
					rc = -1;
				else {
					sprintf(p, "%s/%s", path, names[i]->d_name);
					rc = run_path(p, count);
					free(p);
				}
			}
			free(names[i]);
		}
		free(names);
		return rc;
	}
	(*count)++;
	return run_file(path);
}

int main(int argc, char **argv)
{
	int i, count = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &count) != 0)
			return 1;
	if (count == 0) {
		fprintf(stderr, "%s: no inputs found\n", argv[0]);
		return 1;
	}
	printf("%s: %d inputs ran\n", argv[0], count);
	return 0;
}
