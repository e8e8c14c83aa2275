/* Peer certificate checks and the mapping of TLS failures to one status code
 * and one reason a person can act on. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls_internal.h"

static const char *x509_reason(int err, enum rdmx_tls_role role)
{
	switch (err) {
	case X509_V_ERR_CERT_HAS_EXPIRED:
		return "certificate expired";
	case X509_V_ERR_CERT_NOT_YET_VALID:
		return "certificate not yet valid";
	case X509_V_ERR_CERT_REVOKED:
		return "certificate revoked";
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
		return "self-signed certificate not issued by the cluster CA";
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
	case X509_V_ERR_CERT_SIGNATURE_FAILURE:
		return "certificate not signed by a trusted CA";
	case X509_V_ERR_INVALID_PURPOSE:
		return role == RDMX_TLS_SERVER
		           ? "certificate key usage does not allow TLS client authentication"
		           : "certificate key usage does not allow TLS server authentication";
	case X509_V_ERR_INVALID_CA:
		return "issuer is not a valid CA";
	case X509_V_ERR_UNABLE_TO_GET_CRL:
		return "no CRL for the certificate's issuer";
	case X509_V_ERR_CRL_HAS_EXPIRED:
		return "CRL expired";
	case X509_V_ERR_CRL_NOT_YET_VALID:
		return "CRL not yet valid";
	case X509_V_ERR_CRL_SIGNATURE_FAILURE:
		return "CRL signature invalid";
	case X509_V_ERR_CERT_CHAIN_TOO_LONG:
		return "certificate chain too long";
	default:
		return NULL;
	}
}

int rdmx__tls_verify_cb(int ok, X509_STORE_CTX *store)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct rdmx_tls_conn *conn = ssl ? SSL_get_app_data(ssl) : NULL;
	char match[RDMX_TLS_NAME_MAX + 1], first[RDMX_TLS_NAME_MAX + 1];
	X509 *cert;
	int r;

	if (!conn)
		return 0;
	if (!ok) {
		int err = X509_STORE_CTX_get_error(store);
		const char *reason = x509_reason(err, rdmx__tls_conn_role(conn));

		rdmx__tls_conn_set_verify_failure(
		    conn, reason ? reason : X509_verify_cert_error_string(err), NULL);
		return 0;
	}
	if (X509_STORE_CTX_get_error_depth(store) != 0)
		return 1;
	/* the leaf passed every chain check: now the names, SAN DNS only */
	cert = X509_STORE_CTX_get_current_cert(store);
	r = cert ? rdmx__tls_config_match_peer(rdmx__tls_conn_config(conn), cert, match,
	                                       sizeof(match), first, sizeof(first))
	         : -1;
	if (r == 1) {
		if (rdmx__tls_conn_set_peer_name(conn, match)) {
			X509_STORE_CTX_set_error(store, X509_V_ERR_OUT_OF_MEM);
			rdmx__tls_conn_set_verify_failure(conn, "out of memory", NULL);
			return 0;
		}
		return 1;
	}
	X509_STORE_CTX_set_error(store, X509_V_ERR_HOSTNAME_MISMATCH);
	if (r == 0)
		rdmx__tls_conn_set_verify_failure(conn, "peer certificate name not allowed", first);
	else
		rdmx__tls_conn_set_verify_failure(
		    conn, "peer certificate has no DNS subjectAltName (CN is never used)", NULL);
	return 0;
}

/* Alerts we received: the peer refused us. Certificate alerts say "your
 * certificate", the rest say the protocol. */
static int alert_code(int reason)
{
	switch (reason) {
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
		return RDMX_E_AUTH;
	default:
		return RDMX_E_PROTOCOL;
	}
}

static int map_ssl_lib_error(SSL *ssl, unsigned long e, int in_handshake, char *reason, size_t len)
{
	int r = ERR_GET_REASON(e);
	const char *text = ERR_reason_error_string(e);

	if (!text)
		text = "unknown";
	if (ERR_GET_LIB(e) != ERR_LIB_SSL) {
		snprintf(reason, len, "TLS library error: %s", text);
		return RDMX_E_PROTOCOL;
	}
	if (r >= SSL_AD_REASON_OFFSET && r < SSL_AD_REASON_OFFSET + 256) {
		snprintf(reason, len, "peer refused the session (alert: %s)", text);
		return alert_code(r);
	}
	switch (r) {
	case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
		snprintf(reason, len, "peer sent no certificate");
		return RDMX_E_AUTH;
	case SSL_R_CERTIFICATE_VERIFY_FAILED: {
		long v = SSL_get_verify_result(ssl);
		const char *x =
		    x509_reason((int)v, SSL_is_server(ssl) ? RDMX_TLS_SERVER : RDMX_TLS_CLIENT);

		snprintf(reason, len, "certificate refused: %s",
		         x ? x : X509_verify_cert_error_string(v));
		return RDMX_E_AUTH;
	}
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_WRONG_SSL_VERSION:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
	case SSL_R_UNKNOWN_PROTOCOL:
	case SSL_R_VERSION_TOO_LOW:
		snprintf(reason, len, "peer does not speak TLS 1.3 (%s)", text);
		return RDMX_E_PROTOCOL;
	case SSL_R_UNEXPECTED_EOF_WHILE_READING:
		snprintf(reason, len, "peer closed the connection%s",
		         in_handshake ? " during the handshake" : "");
		return RDMX_E_DISCONNECTED;
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
	case SSL_R_RECORD_LENGTH_MISMATCH:
	case SSL_R_LENGTH_MISMATCH:
	case SSL_R_BAD_PACKET_LENGTH:
	case SSL_R_UNEXPECTED_MESSAGE:
	case SSL_R_UNEXPECTED_RECORD:
		snprintf(reason, len, "peer did not speak TLS (%s)", text);
		return RDMX_E_PROTOCOL;
	default:
		snprintf(reason, len, "%s failed: %s", in_handshake ? "handshake" : "TLS", text);
		return RDMX_E_PROTOCOL;
	}
}

int rdmx__tls_map_error(SSL *ssl, int ssl_err, int in_handshake, char *reason, size_t len)
{
	struct rdmx_tls_conn *conn = SSL_get_app_data(ssl);
	const char *detail = "";
	const char *vf = conn ? rdmx__tls_conn_verify_failure(conn, &detail) : NULL;
	int saved_errno = errno;
	unsigned long e;
	int ret;

	if (vf) {
		/* our own verification refused the peer: the most precise reason */
		if (*detail)
			snprintf(reason, len, "%s: %s", vf, detail);
		else
			snprintf(reason, len, "%s", vf);
		ERR_clear_error();
		return RDMX_E_AUTH;
	}
	switch (ssl_err) {
	case SSL_ERROR_ZERO_RETURN:
		snprintf(reason, len, "peer closed the session");
		ret = RDMX_E_DISCONNECTED;
		break;
	case SSL_ERROR_SYSCALL:
		e = ERR_peek_error();
		if (e) {
			ret = map_ssl_lib_error(ssl, e, in_handshake, reason, len);
		} else if (saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE) {
			snprintf(reason, len, "peer closed the connection%s%s",
			         in_handshake ? " during the handshake" : "",
			         saved_errno ? " (reset)" : "");
			ret = RDMX_E_DISCONNECTED;
		} else {
			snprintf(reason, len, "socket error: %s", strerror(saved_errno));
			ret = RDMX_E_PROVIDER;
		}
		break;
	case SSL_ERROR_SSL:
		e = ERR_peek_error();
		if (e) {
			ret = map_ssl_lib_error(ssl, e, in_handshake, reason, len);
		} else {
			snprintf(reason, len, "TLS failure without detail");
			ret = RDMX_E_PROTOCOL;
		}
		break;
	default:
		snprintf(reason, len, "unexpected TLS state %d", ssl_err);
		ret = RDMX_E_PROTOCOL;
		break;
	}
	ERR_clear_error();
	return ret;
}
