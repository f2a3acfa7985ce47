/* A client of the hiredis synchronous API, run against the proxy by test_hiredis.py.
 *
 * Usage: hiredis_client HOST PORT
 *
 * Checks PING, binary-safe SET/GET (values with \0 and \r\n), a pipeline of 1000 commands
 * (redisAppendCommand, then redisGetReply for each reply), INCR counts, MGET with a missing key,
 * a WRONGTYPE error reply, and a 1 MB value. Exits 0 only if every check passed; prints each
 * failed check on stderr.
 */
#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static int failures = 0;

static void fail(int line, const char* fmt, ...) {
  va_list ap;
  fprintf(stderr, "FAIL hiredis_client.c:%d: ", line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  failures++;
}

#define CHECK(cond, ...)                   \
  do {                                     \
    if (!(cond)) fail(__LINE__, __VA_ARGS__); \
  } while (0)

static const char* type_name(int t) {
  switch (t) {
    case REDIS_REPLY_STRING: return "string";
    case REDIS_REPLY_ARRAY: return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "status";
    case REDIS_REPLY_ERROR: return "error";
    default: return "other";
  }
}

/* Describes a reply for messages (first bytes of strings). */
static void describe(const redisReply* r, char* out, size_t n) {
  if (r == NULL) {
    snprintf(out, n, "NULL");
  } else if (r->type == REDIS_REPLY_INTEGER) {
    snprintf(out, n, "integer %lld", r->integer);
  } else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
             r->type == REDIS_REPLY_ERROR) {
    snprintf(out, n, "%s(len %zu) '%.*s'", type_name(r->type), (size_t)r->len,
             (int)(r->len > 80 ? 80 : r->len), r->str);
  } else if (r->type == REDIS_REPLY_ARRAY) {
    snprintf(out, n, "array of %zu", (size_t)r->elements);
  } else {
    snprintf(out, n, "%s", type_name(r->type));
  }
}

static int is_status(const redisReply* r, const char* s) {
  return r && r->type == REDIS_REPLY_STATUS && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

static int is_bulk(const redisReply* r, const char* s, size_t len) {
  return r && r->type == REDIS_REPLY_STRING && r->len == len && memcmp(r->str, s, len) == 0;
}

static redisReply* cmd(redisContext* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply* r = redisvCommand(c, fmt, ap);
  va_end(ap);
  if (r == NULL) {
    fprintf(stderr, "FATAL: connection error: %s\n", c->errstr);
    exit(2);
  }
  return r;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
    return 2;
  }
  struct timeval tv = {5, 0};
  redisContext* c = redisConnectWithTimeout(argv[1], atoi(argv[2]), tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "FATAL: cannot connect: %s\n", c ? c->errstr : "out of memory");
    return 2;
  }
  struct timeval io = {20, 0};
  redisSetTimeout(c, io);
  char d[256];
  redisReply* r;

  /* PING */
  r = cmd(c, "PING");
  describe(r, d, sizeof d);
  CHECK(is_status(r, "PONG"), "PING: expected status PONG, got %s", d);
  freeReplyObject(r);

  /* Binary-safe key and value: NUL, CR, LF, and every byte value. */
  const char key[] = "hc:bin\0key\r\n*1\r\n";
  size_t keylen = sizeof key - 1;
  char value[600];
  size_t vlen = 0;
  memcpy(value, "a\0b\r\nc\r\n$3\r\n", 12);
  vlen = 12;
  for (int i = 0; i < 256; i++) value[vlen++] = (char)i;
  for (int i = 255; i >= 0; i--) value[vlen++] = (char)i;
  r = cmd(c, "SET %b %b", key, keylen, value, vlen);
  describe(r, d, sizeof d);
  CHECK(is_status(r, "OK"), "SET binary: expected OK, got %s", d);
  freeReplyObject(r);
  r = cmd(c, "GET %b", key, keylen);
  describe(r, d, sizeof d);
  CHECK(is_bulk(r, value, vlen), "GET binary: expected the %zu-byte value back, got %s", vlen, d);
  freeReplyObject(r);
  r = cmd(c, "STRLEN %b", key, keylen);
  CHECK(r->type == REDIS_REPLY_INTEGER && r->integer == (long long)vlen,
        "STRLEN binary: expected %zu", vlen);
  freeReplyObject(r);
  /* Empty value. */
  r = cmd(c, "SET %s %b", "hc:empty", "", (size_t)0);
  CHECK(is_status(r, "OK"), "SET empty value");
  freeReplyObject(r);
  r = cmd(c, "GET %s", "hc:empty");
  describe(r, d, sizeof d);
  CHECK(is_bulk(r, "", 0), "GET empty value: got %s", d);
  freeReplyObject(r);

  /* Pipeline of 1000 commands: 500 SET/GET pairs, all appended before any reply is read. */
  char k[64], v[64];
  for (int i = 0; i < 500; i++) {
    snprintf(k, sizeof k, "hc:pipe:%d", i);
    snprintf(v, sizeof v, "value-%d-\r\n-%d", i, i * 7919);
    redisAppendCommand(c, "SET %s %b", k, v, strlen(v));
    redisAppendCommand(c, "GET %s", k);
  }
  for (int i = 0; i < 500; i++) {
    snprintf(v, sizeof v, "value-%d-\r\n-%d", i, i * 7919);
    if (redisGetReply(c, (void**)&r) != REDIS_OK) {
      fprintf(stderr, "FATAL: pipeline reply %d: %s\n", 2 * i, c->errstr);
      return 2;
    }
    describe(r, d, sizeof d);
    CHECK(is_status(r, "OK"), "pipeline SET #%d: expected OK, got %s", i, d);
    freeReplyObject(r);
    if (redisGetReply(c, (void**)&r) != REDIS_OK) {
      fprintf(stderr, "FATAL: pipeline reply %d: %s\n", 2 * i + 1, c->errstr);
      return 2;
    }
    describe(r, d, sizeof d);
    CHECK(is_bulk(r, v, strlen(v)), "pipeline GET #%d: expected '%s', got %s", i, v, d);
    freeReplyObject(r);
  }

  /* INCR counts: 1000 pipelined INCRs return 1..1000, then GET says 1000. */
  r = cmd(c, "DEL hc:counter");
  freeReplyObject(r);
  for (int i = 0; i < 1000; i++) redisAppendCommand(c, "INCR hc:counter");
  for (int i = 0; i < 1000; i++) {
    if (redisGetReply(c, (void**)&r) != REDIS_OK) {
      fprintf(stderr, "FATAL: INCR reply %d: %s\n", i, c->errstr);
      return 2;
    }
    describe(r, d, sizeof d);
    CHECK(r->type == REDIS_REPLY_INTEGER && r->integer == i + 1,
          "INCR #%d: expected integer %d, got %s", i, i + 1, d);
    freeReplyObject(r);
  }
  r = cmd(c, "GET hc:counter");
  describe(r, d, sizeof d);
  CHECK(is_bulk(r, "1000", 4), "GET hc:counter: expected '1000', got %s", d);
  freeReplyObject(r);
  r = cmd(c, "INCRBY hc:counter -1001");
  CHECK(r->type == REDIS_REPLY_INTEGER && r->integer == -1, "INCRBY -1001: expected -1");
  freeReplyObject(r);

  /* MGET with a missing key in the middle. */
  r = cmd(c, "MGET hc:pipe:0 hc:missing hc:pipe:499");
  describe(r, d, sizeof d);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
    fail(__LINE__, "MGET: expected array of 3, got %s", d);
  } else {
    CHECK(is_bulk(r->element[0], "value-0-\r\n-0", 12), "MGET[0] wrong");
    CHECK(r->element[1]->type == REDIS_REPLY_NIL, "MGET[1]: expected nil, got %s",
          type_name(r->element[1]->type));
    snprintf(v, sizeof v, "value-%d-\r\n-%d", 499, 499 * 7919);
    CHECK(is_bulk(r->element[2], v, strlen(v)), "MGET[2] wrong");
  }
  freeReplyObject(r);

  /* Error reply: wrong type. The connection stays usable. */
  r = cmd(c, "SET hc:str x");
  freeReplyObject(r);
  r = cmd(c, "LPUSH hc:str y");
  describe(r, d, sizeof d);
  {
    const char* want = "WRONGTYPE Operation against a key holding the wrong kind of value";
    CHECK(r->type == REDIS_REPLY_ERROR && r->len == strlen(want) && memcmp(r->str, want, r->len) == 0,
          "LPUSH on a string: expected error '%s', got %s", want, d);
  }
  freeReplyObject(r);
  r = cmd(c, "INCR hc:str");
  describe(r, d, sizeof d);
  CHECK(r->type == REDIS_REPLY_ERROR &&
            strcmp(r->str, "ERR value is not an integer or out of range") == 0,
        "INCR on a non-integer: got %s", d);
  freeReplyObject(r);
  r = cmd(c, "PING");
  CHECK(is_status(r, "PONG"), "PING after error replies");
  freeReplyObject(r);

  /* A 1 MB value with a pattern. */
  size_t big_len = 1 << 20;
  char* big = malloc(big_len);
  for (size_t i = 0; i < big_len; i++) big[i] = (char)((i * 31 + 7) & 0xff);
  r = cmd(c, "SET hc:big %b", big, big_len);
  CHECK(is_status(r, "OK"), "SET 1 MB");
  freeReplyObject(r);
  r = cmd(c, "GET hc:big");
  describe(r, d, sizeof d);
  CHECK(is_bulk(r, big, big_len), "GET 1 MB: value differs (%s)", d);
  freeReplyObject(r);
  free(big);

  redisFree(c);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("OK: all hiredis checks passed\n");
  return 0;
}
