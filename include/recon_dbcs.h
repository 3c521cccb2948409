/*
 * recon_dbcs: a fast way to UTF-8 for the double-byte encodings statements
 * come in (Alipay's GBK; GB18030, Big5, EUC-KR), exactly iconv's result.
 *
 * ASCII bytes are copied; a byte from 0x80 up is read with the byte after it
 * as one pair, whose UTF-8 is asked of iconv the first time the pair is seen
 * and kept (at most 32,768 pairs). A line with anything else (a pair iconv
 * does not turn into one or two characters on its own: a four-byte GB18030
 * sequence, a bad byte, a lead byte at the end) is not converted here: the
 * caller converts it with iconv, byte errors and all. The encodings taken are
 * stateless with ASCII as themselves (checked when the converter is made),
 * so that converting a line pair by pair equals converting it whole.
 */
#ifndef RECON_DBCS_H
#define RECON_DBCS_H

#include <iconv.h>
#include <stdbool.h>
#include <stddef.h>

struct recon_dbcs;

/*
 * A converter for encoding (an iconv name), through cd (iconv_open("UTF-8",
 * encoding), still the caller's), or NULL when the encoding is not one of
 * these (UTF-8 included: nothing to convert).
 */
struct recon_dbcs *recon_dbcs_new(const char *encoding, iconv_t cd);
void recon_dbcs_free(struct recon_dbcs *d);

/*
 * Converts in[0, n) to out, which has room for 2 * n bytes; *outlen: the
 * bytes written. true: done, the result valid UTF-8, and no NUL in it when
 * none was in the input (*nul tells). false: out undefined; convert the line
 * with iconv.
 */
bool recon_dbcs_convert(struct recon_dbcs *d, const char *in, size_t n, char *out, size_t *outlen,
			bool *nul);

#endif
