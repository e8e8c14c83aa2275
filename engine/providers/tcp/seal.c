/* tcp provider: sealed records (AES-256-GCM) under a data connection.
 *
 * When the connection was handed keys (rdmx_conn_set_data_keys: the secure
 * bootstrap derives them from its TLS session), the frame stream of each
 * direction is cut into records of at most TCP_SEAL_MAX bytes:
 *
 *   u32 LE length (1 .. TCP_SEAL_MAX)  ciphertext[length]  tag[16]
 *
 * The length is authenticated as associated data; the nonce is the
 * direction's 96-bit IV with the record counter (big-endian, 64 bits) XORed
 * into its last 8 bytes, as TLS 1.3 does. The counter is never sent: a
 * replayed, reordered or dropped record fails its tag on the receiver, as
 * does any forged or altered one. A direction refuses to seal or open once
 * its counter would wrap. One EVP context per direction, keyed once; a
 * record only resets the IV, so sealing allocates nothing. The cipher is
 * fetched explicitly and the tag moves through OSSL_PARAMs: OpenSSL 3's
 * legacy entry points (EVP_aes_256_gcm, EVP_CIPHER_CTX_ctrl) translate to
 * the same calls at a cost that shows on small records. */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "tcp.h"

/* Starts the next record: its nonce replaces the whole IV of the keyed
 * context. OpenSSL 3.0's EVP_*Init_ex2 with only an IV asks the provider
 * for the IV length through a parameter lookup on every call (a fifth of a
 * small record's instructions); the "fixed IV" parameter with the length
 * (size_t)-1 sets all 12 bytes and resets the GCM state for the next record
 * with one lookup (providers/implementations/ciphers/ciphercommon_gcm.c,
 * setivfixed). */
static bool start_record(struct tcp_seal_dir *d)
{
	uint8_t nonce[TCP_SEAL_IV];
	OSSL_PARAM p[2];

	memcpy(nonce, d->iv, TCP_SEAL_IV);
	for (unsigned i = 0; i < 8; i++)
		nonce[TCP_SEAL_IV - 1 - i] ^= (uint8_t)(d->seq >> (8 * i));
	p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, nonce,
	                                         (size_t)-1);
	p[1] = OSSL_PARAM_construct_end();
	return EVP_CIPHER_CTX_set_params(d->evp, p) == 1;
}

int rdmx__tcp_seal_dir_init(struct tcp_seal_dir *d, const uint8_t key[TCP_SEAL_KEY],
                            const uint8_t iv[TCP_SEAL_IV], bool encrypt)
{
	int ok;

	memset(d, 0, sizeof(*d));
	d->evp = EVP_CIPHER_CTX_new();
	if (!d->evp)
		return RDMX_E_NOMEM;
	d->cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	d->encrypt = encrypt;
	if (!d->cipher)
		ok = 0;
	else if (encrypt)
		ok = EVP_EncryptInit_ex2(d->evp, d->cipher, key, NULL, NULL);
	else
		ok = EVP_DecryptInit_ex2(d->evp, d->cipher, key, NULL, NULL);
	if (ok != 1) {
		RDMX_ERR("tcp: AES-256-GCM setup failed");
		EVP_CIPHER_free(d->cipher);
		EVP_CIPHER_CTX_free(d->evp);
		d->evp = NULL;
		d->cipher = NULL;
		return RDMX_E_PROVIDER;
	}
	memcpy(d->iv, iv, TCP_SEAL_IV);
	return 0;
}

void rdmx__tcp_seal_dir_fini(struct tcp_seal_dir *d)
{
	EVP_CIPHER_CTX_free(d->evp);
	EVP_CIPHER_free(d->cipher);
	OPENSSL_cleanse(d, sizeof(*d));
}

/* The tag out of (get) or into (set) the context. */
static bool tag_param(struct tcp_seal_dir *d, uint8_t *tag, bool set)
{
	OSSL_PARAM p[2];

	p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, TCP_SEAL_TAG);
	p[1] = OSSL_PARAM_construct_end();
	return (set ? EVP_CIPHER_CTX_set_params(d->evp, p)
	            : EVP_CIPHER_CTX_get_params(d->evp, p)) == 1;
}

int rdmx__tcp_seal_record(struct tcp_seal_dir *d, const struct iovec *iov, int niov, size_t take,
                          uint8_t *out)
{
	uint8_t *p = out + TCP_SEAL_HDR;
	size_t left = take;
	int n;

	if (!take || take > TCP_SEAL_MAX)
		return RDMX_E_INVAL;
	if (d->seq == UINT64_MAX)
		return RDMX_E_FULL;
	rdmx__st32(out, (uint32_t)take);
	if (!start_record(d) || EVP_EncryptUpdate(d->evp, NULL, &n, out, TCP_SEAL_HDR) != 1)
		return RDMX_E_PROVIDER;
	for (int i = 0; i < niov && left; i++) {
		size_t piece = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (!piece)
			continue;
		if (EVP_EncryptUpdate(d->evp, p, &n, iov[i].iov_base, (int)piece) != 1)
			return RDMX_E_PROVIDER;
		p += n;
		left -= piece;
	}
	if (left || EVP_EncryptFinal_ex(d->evp, p, &n) != 1)
		return RDMX_E_PROVIDER;
	p += n;
	if (!tag_param(d, p, false))
		return RDMX_E_PROVIDER;
	d->seq++;
	return (int)(TCP_SEAL_HDR + take + TCP_SEAL_TAG);
}

int rdmx__tcp_seal_open_begin(struct tcp_seal_dir *d, const uint8_t *rec)
{
	uint32_t len = rdmx__ld32(rec);
	int n;

	if (!len || len > TCP_SEAL_MAX)
		return RDMX_E_PROTOCOL;
	if (d->seq == UINT64_MAX)
		return RDMX_E_FULL;
	if (!start_record(d) || EVP_DecryptUpdate(d->evp, NULL, &n, rec, TCP_SEAL_HDR) != 1)
		return RDMX_E_AUTH;
	return 0;
}

int rdmx__tcp_seal_open_update(struct tcp_seal_dir *d, uint8_t *out, const uint8_t *in, size_t len)
{
	int n;

	if (!len)
		return 0;
	if (len > TCP_SEAL_MAX || EVP_DecryptUpdate(d->evp, out, &n, in, (int)len) != 1 ||
	    (size_t)n != len)
		return RDMX_E_AUTH;
	return 0;
}

int rdmx__tcp_seal_open_final(struct tcp_seal_dir *d, const uint8_t tag[TCP_SEAL_TAG])
{
	uint8_t rest[16], want[TCP_SEAL_TAG];
	int m;

	memcpy(want, tag, TCP_SEAL_TAG);
	if (!tag_param(d, want, true) || EVP_DecryptFinal_ex(d->evp, rest, &m) != 1)
		return RDMX_E_AUTH;
	d->seq++;
	return 0;
}

int rdmx__tcp_seal_open(struct tcp_seal_dir *d, uint8_t *rec, size_t rec_len)
{
	uint32_t len;
	int rc;

	if (rec_len < TCP_SEAL_HDR + TCP_SEAL_TAG)
		return RDMX_E_PROTOCOL;
	len = rdmx__ld32(rec);
	if (!len || len > TCP_SEAL_MAX || rec_len != TCP_SEAL_HDR + len + TCP_SEAL_TAG)
		return RDMX_E_PROTOCOL;
	rc = rdmx__tcp_seal_open_begin(d, rec);
	if (!rc)
		rc = rdmx__tcp_seal_open_update(d, rec + TCP_SEAL_HDR, rec + TCP_SEAL_HDR, len);
	if (!rc)
		rc = rdmx__tcp_seal_open_final(d, rec + TCP_SEAL_HDR + len);
	return rc;
}

int rdmx__tcp_seal_create(const uint8_t tx_key[TCP_SEAL_KEY], const uint8_t tx_iv[TCP_SEAL_IV],
                          const uint8_t rx_key[TCP_SEAL_KEY], const uint8_t rx_iv[TCP_SEAL_IV],
                          struct tcp_seal **out)
{
	struct tcp_seal *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return RDMX_E_NOMEM;
	rc = rdmx__tcp_seal_dir_init(&s->tx, tx_key, tx_iv, true);
	if (rc)
		goto free_seal;
	rc = rdmx__tcp_seal_dir_init(&s->rx, rx_key, rx_iv, false);
	if (rc)
		goto fini_tx;
	rc = rdmx__tcp_seal_dir_init(&s->tx_pipe, tx_key, tx_iv, true);
	if (rc)
		goto fini_rx;
	s->txbuf = malloc((size_t)TCP_SEAL_SLOTS * TCP_SEAL_REC);
	s->rxbuf = malloc(TCP_SEAL_RXBUF);
	if (!s->txbuf || !s->rxbuf) {
		rc = RDMX_E_NOMEM;
		goto free_bufs;
	}
	*out = s;
	return 0;

free_bufs:
	free(s->txbuf);
	free(s->rxbuf);
	rdmx__tcp_seal_dir_fini(&s->tx_pipe);
fini_rx:
	rdmx__tcp_seal_dir_fini(&s->rx);
fini_tx:
	rdmx__tcp_seal_dir_fini(&s->tx);
free_seal:
	free(s);
	return rc;
}

void rdmx__tcp_seal_destroy(struct tcp_seal *s)
{
	if (!s)
		return;
	rdmx__tcp_seal_pipe_settle(s, false); /* nothing seals into txbuf any more */
	rdmx__tcp_seal_dir_fini(&s->tx);
	rdmx__tcp_seal_dir_fini(&s->rx);
	rdmx__tcp_seal_dir_fini(&s->tx_pipe);
	/* plaintext of the last records stays in the buffers otherwise */
	OPENSSL_cleanse(s->txbuf, (size_t)TCP_SEAL_SLOTS * TCP_SEAL_REC);
	OPENSSL_cleanse(s->rxbuf, TCP_SEAL_RXBUF);
	free(s->txbuf);
	free(s->rxbuf);
	free(s);
}

void rdmx__tcp_seal_reset(struct tcp_seal *s)
{
	if (!s)
		return;
	rdmx__tcp_seal_pipe_settle(s, false);
	s->slot_head = s->slot_count = 0;
	s->tx_off = 0;
	s->rx_len = s->rx_off = 0;
}
