/* loop_conns.c - the connections of test_tls.c's test_loop_elsewhere, made
 * in a translation unit of their own (linked into build/test_tls): the
 * adapters' functions are static, so this file's connect hooks are other
 * functions than test_tls.c's, as in a program whose event loop lives in
 * one file and makes its connections in another. The core is test_tls.c's
 * (RLOCK_IMPLEMENTATION there). */
#include "adapters/rlock_tls.h" /* first: sets the POSIX feature macros */

int lc_posix(rlock_node *node, rlock_posix_conn *pc, int port, uint32_t bound_ms);
int lc_tls(rlock_node *node, rlock_tls_conn *t, int port, uint32_t bound_ms, const rlock_tls_config *cfg);

/* node on a plain TCP connection to 127.0.0.1:port. 0 ok. */
int lc_posix(rlock_node *node, rlock_posix_conn *pc, int port, uint32_t bound_ms) {
    if (rlock_posix_init_tcp(pc, "127.0.0.1", port, bound_ms) != 0) return -1;
    return rlock_node_init(node, rlock_posix_transport(pc)) == RLOCK_OK ? 0 : -1;
}

/* node on a TLS connection to 127.0.0.1:port. 0 ok, else t->err says why. */
int lc_tls(rlock_node *node, rlock_tls_conn *t, int port, uint32_t bound_ms, const rlock_tls_config *cfg) {
    if (rlock_tls_init(t, "127.0.0.1", port, bound_ms, cfg) != 0) return -1;
    return rlock_node_init(node, rlock_tls_transport(t)) == RLOCK_OK ? 0 : -1;
}
