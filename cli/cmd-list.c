/* placeholder replaced by the event-layer work */
#include "cmd.h"
int cmd_list(int argc, char **argv) { (void)argc; (void)argv; return 0; }
