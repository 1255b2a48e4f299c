/* A C program linked with libcaliper before the plugin (see plugin.h),
 * so that the loader looks up the plugin's calls in libcaliper first. */
void plugin_run(void);

int main(void)
{
    plugin_run();
    return 0;
}
