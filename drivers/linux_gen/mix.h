// SPDX-License-Identifier: Apache-2.0
/*
 * mix.h: an IMIX's frames and the order they are sent in, shared by srgen.c and
 * xdpgen.c (-I LEN:WEIGHT,...), so that both engines send one mix alike.
 *
 * The frame file holds the mix's frames back to back, of the lengths listed.
 * Packet i is frame pattern[i % plen]: a smooth weighted round robin (nginx's)
 * over the weights, plen = sum(weights) packets in which each frame comes exactly
 * weight times, spread as evenly as the weights allow (7:4:1 gives
 * S M S S M S S M S M S L).
 */
#ifndef SRPERF_MIX_H
#define SRPERF_MIX_H

#include <stdint.h>
#include <stdlib.h>

#define MIX_MAX_FRAMES 64u
#define MIX_MAX_PATTERN 65536u

struct mix {
	uint32_t n;                         /* frames */
	size_t len[MIX_MAX_FRAMES], off[MIX_MAX_FRAMES];
	uint32_t weight[MIX_MAX_FRAMES];
	uint32_t *pattern, plen;            /* packet i is frame pattern[i % plen] */
};

/* Parse spec for a frame file of total bytes and build the pattern; NULL, or
 * what is wrong. */
static const char *mix_parse(struct mix *m, const char *spec, size_t total)
{
	const char *p = spec;
	size_t sum = 0;
	uint64_t weights = 0;
	int64_t cur[MIX_MAX_FRAMES] = { 0 };
	uint32_t i, k;

	m->n = 0;
	while (*p) {
		char *end;
		unsigned long len = strtoul(p, &end, 10), w;

		if (end == p || *end != ':')
			return "not LEN:WEIGHT,...";
		p = end + 1;
		w = strtoul(p, &end, 10);
		if (end == p || (*end && *end != ','))
			return "not LEN:WEIGHT,...";
		if (!w || !len)
			return "lengths and weights >= 1 needed";
		if (m->n >= MIX_MAX_FRAMES)
			return "more than 64 frames";
		m->off[m->n] = sum;
		m->len[m->n] = len;
		m->weight[m->n++] = (uint32_t)w;
		sum += len;
		weights += w;
		p = *end ? end + 1 : end;
	}
	if (!m->n || sum != total)
		return "it does not describe the frame file's bytes";
	if (weights > MIX_MAX_PATTERN)
		return "the weights add up to more than 65536";
	m->plen = (uint32_t)weights;
	m->pattern = calloc(m->plen, sizeof(uint32_t));
	if (!m->pattern)
		return "out of memory";
	for (k = 0; k < m->plen; k++) {
		uint32_t best = 0;

		for (i = 0; i < m->n; i++) {
			cur[i] += m->weight[i];
			if (cur[i] > cur[best])
				best = i;
		}
		cur[best] -= (int64_t)weights;
		m->pattern[k] = best;
	}
	return NULL;
}

#endif
