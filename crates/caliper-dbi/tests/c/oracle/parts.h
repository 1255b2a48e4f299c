/* The multi-file program of the counts oracle: main.c, shapes.c, words.c. */
struct shape {
    const char *name;
    double (*area)(const struct shape *);
    double a, b;
};

struct shape make_shape(int kind, double a, double b);
double total_area(const struct shape *shapes, int n);
long fib(int n);
int count_words(const char *text, int *longest);
long sort_and_sum(int n);
