/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * protocol.h - what a collector is sent: the request that carries one profile to Grafana Pyroscope (/ingest, or the push API over Connect) or to Parca
 * (ProfileStoreService.WriteRaw). Pure functions: no I/O,
 * no network, no state. The shipper (ship.c) sends what these build; docs/shipping.md has the
 * contract each server implements and the sources it was read from.
 */
#ifndef RP_PROTOCOL_H
#define RP_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "output/sidecar.h"

enum protocol {
	PROTOCOL_PYROSCOPE = 0,	 /* POST /ingest?name=...&format=pprof, body: the gzip'd pprof */
	PROTOCOL_PYROSCOPE_PUSH, /* POST /push.v1.PusherService/Push, Connect, application/proto */
	PROTOCOL_PARCA,		 /* ProfileStoreService.WriteRaw */
};

struct protocol_request {
	char *url;		  /* the full URL to POST to, malloc'd */
	const char *content_type; /* a string literal */
	/* Extra headers this protocol needs ("Connect-Protocol-Version: 1"), literals; NULL-ended. */
	const char *headers[4];
	uint8_t *body; /* malloc'd; the profile bytes are copied in */
	size_t len;
	/* Pyroscope: series labels left out or values cut to fit its default limits (30 labels,
	 * names of 1024 bytes, values of 2048) */
	size_t labels_trimmed;
};

/*
 * Builds the request for one profile: base_url is the collector's URL as configured
 * ("https://host:4040", optionally with a path prefix, with or without a trailing '/'),
 * profile/len the gzip'd pprof exactly as the spool holds it. The same sidecar and profile always
 * give the same bytes (labels sorted; the push ID derived from the sidecar), so a resend is
 * identical. What a protocol cannot carry is mapped, not refused (docs/shipping.md): label names
 * to [A-Za-z_][A-Za-z0-9_]*, labels named "__*" left out, and in /ingest's name the bytes its
 * grammar would misread to '_'. 0, -EINVAL (a base URL that is not http:// or https:// with a
 * host, or has a query or fragment; an empty label name; two label names equal once mapped; an
 * unknown protocol), -ENOMEM. On error *out is zeroed (protocol_request_release is harmless).
 */
int protocol_build(enum protocol proto, const char *base_url, const struct sidecar *sc,
		   const void *profile, size_t len, struct protocol_request *out);
void protocol_request_release(struct protocol_request *r);

/*
 * Reads a 2xx answer's body where the protocol can carry an error in it (gRPC-web's grpc-status
 * trailer, Connect's error JSON): 0 when the body says success (or the protocol has nothing to
 * say), -EPROTO with a reason in err when the server refused it despite the 2xx.
 */
int protocol_check_response(enum protocol proto, const void *body, size_t len, char *err,
			    size_t errlen);
/*
 * The same, with the answer's HTTP header block as well (headers/hlen: the "Name: value" lines
 * of the final response, CRLF or LF separated; NULL/0 if none). gRPC-web puts grpc-status in the
 * body's trailer frame (flag 0x80), except in a "Trailers-Only" answer (an error before any
 * message), where it comes among the HTTP headers and the body is empty: for Parca the shipper
 * must pass the headers, else such an answer reads as -EPROTO "without a grpc-status". With
 * libcurl: collect CURLOPT_HEADERFUNCTION's lines, restarting at each status line (a 100
 * Continue has its own block).
 */
int protocol_check_reply(enum protocol proto, const char *headers, size_t hlen, const void *body,
			 size_t len, char *err, size_t errlen);

/*
 * What a refused request's answer (any status) says, for the one log line: Pyroscope's JSON
 * error body ({"code":"invalid_argument","message":"..."}: both its /ingest handler and Connect
 * write it) as "invalid_argument: ..."; Parca's grpc-status and grpc-message (body trailer or
 * headers) as "grpc-status 3: ..."; else the body's text up to its first '<', control bytes as
 * spaces. Cut to outlen. 0, or -ENOENT when the answer says nothing (out is then "").
 */
int protocol_error_reason(enum protocol proto, const char *headers, size_t hlen, const void *body,
			  size_t len, char *out, size_t outlen);

/* "pyroscope", "pyroscope-push", "parca" <-> the enum. -EINVAL for other names. */
int protocol_parse(const char *name, enum protocol *out);
const char *protocol_name(enum protocol proto);

#endif
