/*
 * bf_client: load generator for bloom-filter writes and lookups, comparing bloomproxy's BF.*
 * commands with the client-side ways of keeping a bloom filter in plain Redis.
 *
 * Built by bench/bf_compare.sh into a temp dir (no CMake):
 *   cc -O2 bench/bf_client.c -o bf_client -lhiredis -lpthread -lm
 *
 * Usage: bf_client -p PORT -m MODE [-h HOST] [-c CONNS] [-P PIPELINE] [-n ITEMS | -t SECS]
 *                  [-k KEY] [-b BATCH] [--capacity C] [--error E] [--nonscaling] [--seed S]
 *                  [--prefix STR] [--no-remap] [--keep-going] [--error-log FILE]
 *        bf_client --geometry [--capacity C] [--error E] [--nonscaling]
 *        bf_client --positions [--capacity C] [--error E] [--nonscaling] ITEM...
 *
 * One thread per connection (hiredis, synchronous API). Each thread sends a batch of PIPELINE
 * units with one write, then reads all their replies, and repeats, until ITEMS items are done
 * (-n, split over the connections) or SECS seconds have passed (-t; default 5 s). Items are
 * "<prefix><random 64-bit decimal>" (prefix "item:"), from a per-connection splitmix64 stream
 * (--seed makes the items reproducible: connection i uses seed + i).
 *
 * Modes (a unit is what PIPELINE counts; an "op" is one item):
 *   proxy-add       BF.ADD key item                     (to bloomproxy; unit = 1 item)
 *   proxy-exists    BF.EXISTS key item                  (to bloomproxy; unit = 1 item)
 *   proxy-madd      BF.MADD key item x BATCH            (to bloomproxy; unit = 1 command)
 *   setbit          k x SETBIT key pos 1                (to redis; unit = 1 item = k commands)
 *   getbit          k x GETBIT key pos                  (to redis; unit = 1 item = k commands)
 *   setbit-madd     BATCH x k x SETBIT                  (to redis; unit = BATCH items)
 *   lua-add         EVALSHA add 1 key pos x k           (to redis; unit = 1 item; script sets
 *                                                        the bits, returns 1 if any was 0)
 *   lua-exists      EVALSHA exists 1 key pos x k        (to redis; returns 0 at the first 0 bit)
 *   bitfield-add    BITFIELD key SET u1 pos 1 (x k)     (to redis; unit = 1 item: the floor, one
 *                                                        command per item, what a proxy needs)
 *   bitfield-exists BITFIELD_RO key GET u1 pos (x k)    (to redis; unit = 1 item)
 *   set-get         SET key:i:j item, GET key:i:j       (to either; unit = 1 item = 2 commands;
 *                                                        checks that the GET returns the item the
 *                                                        SET before it wrote: a correctness probe
 *                                                        for soaks, not a bloom filter; i = the
 *                                                        connection, j = a counter mod 4096)
 *
 * The client-side modes compute positions exactly as RedisBloom does: a = MurmurHash64A(item,
 * 0xc6a4a7935bd1e995), b = MurmurHash64A(item, a), pos_i = (a + i*b) mod bits, 0 <= i < k, for
 * the first sub-filter of a filter reserved with --error E (default 0.01) and --capacity C
 * (default 10000000): its error is E/2 (E with --nonscaling), bpe = -ln(error)/ln(2)^2,
 * bits = ceil((uint64)(C*bpe) / 64) * 64, k = ceil(ln(2) * bpe) (0.01/10M: 110,276,672 bits,
 * k = 8). Each position is turned into the Redis bit offset of the same bit of the same byte
 * ((pos & ~7) | (7 - (pos & 7)): RedisBloom numbers bits from the least significant, SETBIT
 * from the most significant), so the string has RedisBloom's (and bloomproxy's) bytes;
 * --no-remap sends the raw positions instead (what most "bloom filter on Redis" libraries do;
 * same cost).
 *
 * Output, one line on stdout:
 *   mode=M clients=C pipeline=P ops=N secs=S ops_per_sec=X cmds=N cmds_per_sec=X errors=E
 *   positive_pct=F
 * ops = items; cmds = commands sent; positive = replies meaning "new" (add modes) or "may
 * exist" (exists modes; set-get: GETs that returned the value just SET). Exit status: 0 if no
 * error, 1 if any error reply or unexpected reply (the first one is printed on stderr), 2 on a
 * usage or connection problem.
 *
 * For soaks (bench/soak.sh), where the server may fail for a while:
 *   --keep-going     a broken connection is counted as an error and replaced (a new connection
 *                    every 50 ms until one works, each failure counted too) instead of ending
 *                    the worker; a read waits at most 10 s for a reply (then: a "timeout" error
 *                    and a new connection). The replies of the batch in flight are lost (not
 *                    retried). Exit status 1 if any error, 2 only for usage problems or when
 *                    the first connections cannot be made. The output line gets reconnects=N.
 *   --error-log FILE append every error to FILE, aggregated per tenth of a second (wall clock)
 *                    and message: one line "UNIX_SECONDS.D<TAB>COUNT<TAB>MESSAGE" per (tenth,
 *                    message), written at exit (D: the tenth the errors came in). Messages: "error reply: <the error>", "connection error: ...",
 *                    "cannot connect: ...", "timeout: ...", "unexpected ... reply ...", and for
 *                    set-get "write lost: ..." (GET nil after the SET replied OK) and "wrong
 *                    value: ..." (GET returned something else than what the SET wrote).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Hashing and geometry (RedisBloom's bloom.c / murmurhash2.c)                                  */

static uint64_t murmur64a(const void *key, size_t len, uint64_t seed) {
  const uint64_t m = 0xc6a4a7935bd1e995ULL;
  const int r = 47;
  const unsigned char *p = (const unsigned char *)key;
  uint64_t h = seed ^ (len * m);
  for (size_t i = 0; i < len / 8; i++, p += 8) {
    uint64_t k;
    memcpy(&k, p, 8); /* little-endian host (x86-64, arm64) */
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  switch (len & 7) {
    case 7: h ^= (uint64_t)p[6] << 48; /* fall through */
    case 6: h ^= (uint64_t)p[5] << 40; /* fall through */
    case 5: h ^= (uint64_t)p[4] << 32; /* fall through */
    case 4: h ^= (uint64_t)p[3] << 24; /* fall through */
    case 3: h ^= (uint64_t)p[2] << 16; /* fall through */
    case 2: h ^= (uint64_t)p[1] << 8;  /* fall through */
    case 1: h ^= (uint64_t)p[0]; h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

typedef struct {
  double error; /* the sub-filter's own error */
  double bpe;
  uint64_t bits;
  uint64_t bytes;
  unsigned k;
} geometry_t;

static geometry_t size_link(uint64_t capacity, double error) {
  geometry_t g;
  g.error = error;
  g.bpe = -(log(error) / 0.480453013918201);
  uint64_t bits0 = (uint64_t)((double)capacity * g.bpe);
  if (bits0 == 0) bits0 = 1;
  g.bytes = ((bits0 + 63) / 64) * 8;
  g.bits = g.bytes * 8;
  g.k = (unsigned)ceil(0.693147180559945 * g.bpe);
  return g;
}

#define MAX_K 64

/* The k Redis bit offsets of an item (remapped to RedisBloom's byte order unless raw). */
static unsigned item_offsets(const geometry_t *g, const char *item, size_t len, int remap,
                             uint64_t *out) {
  uint64_t a = murmur64a(item, len, 0xc6a4a7935bd1e995ULL);
  uint64_t b = murmur64a(item, len, a);
  for (unsigned i = 0; i < g->k; i++) {
    uint64_t pos = (a + (uint64_t)i * b) % g->bits;
    out[i] = remap ? ((pos & ~(uint64_t)7) | (7 - (pos & 7))) : pos;
  }
  return g->k;
}

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                      */

enum mode {
  PROXY_ADD, PROXY_EXISTS, PROXY_MADD, SETBIT, GETBIT, SETBIT_MADD, LUA_ADD, LUA_EXISTS,
  BITFIELD_ADD, BITFIELD_EXISTS, SET_GET
};
static const char *const kModeNames[] = {
  "proxy-add", "proxy-exists", "proxy-madd", "setbit", "getbit", "setbit-madd", "lua-add",
  "lua-exists", "bitfield-add", "bitfield-exists", "set-get"
};
#define N_MODES ((int)(sizeof kModeNames / sizeof kModeNames[0]))

static const char kLuaAdd[] =
    "local r = 0\n"
    "for i = 1, #ARGV do\n"
    "  if redis.call('SETBIT', KEYS[1], ARGV[i], 1) == 0 then r = 1 end\n"
    "end\n"
    "return r\n";
static const char kLuaExists[] =
    "for i = 1, #ARGV do\n"
    "  if redis.call('GETBIT', KEYS[1], ARGV[i]) == 0 then return 0 end\n"
    "end\n"
    "return 1\n";

static struct {
  const char *host;
  int port;
  enum mode mode;
  int conns;
  int pipeline;
  long long items; /* -n; 0 = timed */
  double secs;     /* -t */
  const char *key;
  int batch;
  uint64_t capacity;
  double error;
  int nonscaling;
  uint64_t seed;
  int seed_set;
  const char *prefix;
  int remap;
  int keep_going;
  const char *error_log;
  geometry_t geo;
  char sha[41];
} opt = {.host = "127.0.0.1", .mode = PROXY_ADD, .conns = 50, .pipeline = 1, .batch = 100,
         .capacity = 10000000, .error = 0.01, .prefix = "item:", .remap = 1};

static void usage(FILE *f) {
  fprintf(f,
          "usage: bf_client -p PORT -m MODE [-h HOST] [-c CONNS] [-P PIPELINE] [-n ITEMS | -t SECS]\n"
          "                 [-k KEY] [-b BATCH] [--capacity C] [--error E] [--nonscaling]\n"
          "                 [--seed S] [--prefix STR] [--no-remap] [--keep-going] [--error-log FILE]\n"
          "       bf_client --geometry [--capacity C] [--error E] [--nonscaling]\n"
          "       bf_client --positions [--capacity C] [--error E] [--nonscaling] ITEM...\n"
          "modes:");
  for (int i = 0; i < N_MODES; i++) fprintf(f, " %s", kModeNames[i]);
  fprintf(f, "\n(see the comment at the top of bench/bf_client.c)\n");
}

static void die_usage(const char *msg, const char *arg) {
  fprintf(stderr, "bf_client: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
  usage(stderr);
  exit(2);
}

static long long parse_ll(const char *s, const char *what, long long min) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < min) die_usage(what, s);
  return v;
}

static double parse_double(const char *s, const char *what) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end) die_usage(what, s);
  return v;
}

/* ------------------------------------------------------------------------------------------ */
/* RESP encoding into a growable buffer                                                         */

typedef struct {
  char *p;
  size_t len, cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t more) {
  if (b->len + more <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) {
    perror("realloc");
    exit(2);
  }
  b->cap = cap;
}

static size_t u64_to_str(uint64_t v, char *out) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

static void put_header(buf_t *b, char type, uint64_t n) {
  buf_reserve(b, 24);
  b->p[b->len++] = type;
  b->len += u64_to_str(n, b->p + b->len);
  b->p[b->len++] = '\r';
  b->p[b->len++] = '\n';
}

static void put_bulk(buf_t *b, const char *s, size_t len) {
  put_header(b, '$', len);
  buf_reserve(b, len + 2);
  memcpy(b->p + b->len, s, len);
  b->len += len;
  b->p[b->len++] = '\r';
  b->p[b->len++] = '\n';
}

static void put_str(buf_t *b, const char *s) { put_bulk(b, s, strlen(s)); }

static void put_u64(buf_t *b, uint64_t v) {
  char tmp[24];
  put_bulk(b, tmp, u64_to_str(v, tmp));
}

/* ------------------------------------------------------------------------------------------ */
/* Worker threads                                                                               */

static atomic_int g_stop;
static pthread_barrier_t g_start;
static pthread_mutex_t g_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_first_error[512];
static atomic_int g_conn_failed;

/* --error-log: errors aggregated per (wall-clock tenth of a second, message), in the order
 * first seen. */
typedef struct {
  long long tenth, count; /* tenth: seconds since the epoch x 10 */
  char msg[200];
} err_entry_t;
static err_entry_t *g_errs;
static size_t g_n_errs, g_cap_errs;
static long long g_errs_dropped;
#define MAX_ERR_ENTRIES 200000
#define READ_TIMEOUT_SECS 10
#define STR(x) #x
#define XSTR(x) STR(x)

typedef struct {
  int index;
  long long quota; /* items to do when counted (-n) */
  redisContext *ctx;
  uint64_t rng;
  long long ops, cmds, errors, positives, reconnects;
  uint64_t counter; /* set-get: key suffix */
  struct timespec end;
} worker_t;

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Count an error; fmt has one %s, filled with detail. */
static void note_error(worker_t *w, const char *fmt, const char *detail) {
  w->errors++;
  char msg[sizeof g_errs[0].msg];
  if (opt.error_log) {
    snprintf(msg, sizeof msg, fmt, detail ? detail : "");
    for (char *c = msg; *c; c++) {
      if (*c == '\t' || *c == '\r' || *c == '\n') *c = ' ';
    }
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  pthread_mutex_lock(&g_err_lock);
  if (!g_first_error[0]) {
    snprintf(g_first_error, sizeof g_first_error, fmt, detail ? detail : "");
  }
  if (opt.error_log) {
    /* The same message in the same tenth is usually among the last few entries. */
    long long tenth = (long long)now.tv_sec * 10 + now.tv_nsec / 100000000;
    size_t i = g_n_errs, stop = g_n_errs > 64 ? g_n_errs - 64 : 0;
    while (i > stop && !(g_errs[i - 1].tenth == tenth && !strcmp(g_errs[i - 1].msg, msg))) i--;
    if (i > stop) {
      g_errs[i - 1].count++;
    } else if (g_n_errs < MAX_ERR_ENTRIES) {
      if (g_n_errs == g_cap_errs) {
        size_t cap = g_cap_errs ? 2 * g_cap_errs : 256;
        err_entry_t *p = realloc(g_errs, cap * sizeof *p);
        if (!p) {
          g_errs_dropped++;
          goto out;
        }
        g_errs = p;
        g_cap_errs = cap;
      }
      g_errs[g_n_errs].tenth = tenth;
      g_errs[g_n_errs].count = 1;
      memcpy(g_errs[g_n_errs].msg, msg, sizeof msg);
      g_n_errs++;
    } else {
      g_errs_dropped++;
    }
  }
out:
  pthread_mutex_unlock(&g_err_lock);
}

static void write_error_log(void) {
  if (!opt.error_log || (!g_n_errs && !g_errs_dropped)) return;
  FILE *f = fopen(opt.error_log, "a");
  if (!f) {
    fprintf(stderr, "bf_client: cannot open %s: %s\n", opt.error_log, strerror(errno));
    return;
  }
  for (size_t i = 0; i < g_n_errs; i++) {
    fprintf(f, "%lld.%lld\t%lld\t%s\n", g_errs[i].tenth / 10, g_errs[i].tenth % 10, g_errs[i].count,
            g_errs[i].msg);
  }
  if (g_errs_dropped) {
    fprintf(f, "%lld.0\t%lld\t(error log full: errors not itemised)\n", (long long)time(NULL),
            g_errs_dropped);
  }
  fclose(f);
}

/* --keep-going: bound the wait for a reply, so a stalled server is reported, not waited on. */
static void set_read_timeout(redisContext *c) {
  if (!opt.keep_going) return;
  struct timeval tv = {READ_TIMEOUT_SECS, 0};
  redisSetTimeout(c, tv);
}

static int stopping(void) { return atomic_load_explicit(&g_stop, memory_order_relaxed); }

/* --keep-going: replace a broken connection; tries every 50 ms until it works or the run is
 * over (returns -1 then). */
static int reconnect(worker_t *w) {
  if (w->ctx) redisFree(w->ctx);
  w->ctx = NULL;
  while (!stopping()) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(opt.host, opt.port, tv);
    if (c && !c->err) {
      set_read_timeout(c);
      w->ctx = c;
      w->reconnects++;
      return 0;
    }
    note_error(w, "cannot connect: %s", c ? c->errstr : "out of memory");
    if (c) redisFree(c);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static const char *reply_type_name(int t) {
  switch (t) {
    case REDIS_REPLY_STRING: return "bulk string";
    case REDIS_REPLY_ARRAY: return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "status";
    case REDIS_REPLY_ERROR: return "error";
    default: return "unknown";
  }
}

/* Check that a reply is an integer 0 or 1; returns it, or -1 (and counts an error). */
static int int01(worker_t *w, const redisReply *r) {
  if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) return (int)r->integer;
  if (r->type == REDIS_REPLY_ERROR) {
    note_error(w, "error reply: %s", r->str);
  } else if (r->type == REDIS_REPLY_INTEGER) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%lld", r->integer);
    note_error(w, "unexpected integer reply %s (want 0 or 1)", tmp);
  } else {
    note_error(w, "unexpected %s reply (want integer 0 or 1)", reply_type_name(r->type));
  }
  return -1;
}

static int read_reply(worker_t *w, redisReply **out) {
  void *r = NULL;
  errno = 0;
  if (redisGetReply(w->ctx, &r) != REDIS_OK || !r) {
    if (w->ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      note_error(w, "timeout: no reply within %s", opt.keep_going ? XSTR(READ_TIMEOUT_SECS) " s" : "the socket timeout");
    } else {
      note_error(w, "connection error: %s", w->ctx->errstr[0] ? w->ctx->errstr : "no reply");
    }
    if (!opt.keep_going) atomic_store(&g_conn_failed, 1);
    return -1;
  }
  *out = r;
  return 0;
}

/* Items per unit (what -P counts) for the mode. */
static int items_per_unit(void) {
  return (opt.mode == PROXY_MADD || opt.mode == SETBIT_MADD) ? opt.batch : 1;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  const geometry_t *g = &opt.geo;
  const unsigned k = g->k;
  const size_t keylen = strlen(opt.key);
  const size_t plen = strlen(opt.prefix);
  const int ipu = items_per_unit();
  buf_t b = {0};
  char item[128];
  uint64_t offs[MAX_K];
  memcpy(item, opt.prefix, plen);
  /* set-get: the value each unit of the batch SET, to check its GET against */
  char (*sg_vals)[128] = NULL;
  size_t *sg_lens = NULL;
  if (opt.mode == SET_GET) {
    sg_vals = malloc((size_t)opt.pipeline * sizeof *sg_vals);
    sg_lens = malloc((size_t)opt.pipeline * sizeof *sg_lens);
    if (!sg_vals || !sg_lens) {
      perror("malloc");
      exit(2);
    }
  }

  pthread_barrier_wait(&g_start);
  long long left = w->quota;
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    int units = opt.pipeline;
    if (opt.items) {
      if (left <= 0) break;
      long long need = (left + ipu - 1) / ipu;
      if (need < units) units = (int)need;
    }
    /* Items of the last unit of a counted run may be fewer than the batch. */
    b.len = 0;
    long long nreplies = 0, batch_items = 0;
    for (int u = 0; u < units; u++) {
      int n_items = ipu;
      if (opt.items && left - batch_items < n_items) n_items = (int)(left - batch_items);
      if (opt.mode == PROXY_MADD) {
        put_header(&b, '*', 2 + (uint64_t)n_items);
        put_str(&b, "BF.MADD");
        put_bulk(&b, opt.key, keylen);
      }
      for (int i = 0; i < n_items; i++) {
        size_t ilen = plen + u64_to_str(splitmix64(&w->rng), item + plen);
        switch (opt.mode) {
          case PROXY_ADD:
          case PROXY_EXISTS:
            put_header(&b, '*', 3);
            put_str(&b, opt.mode == PROXY_ADD ? "BF.ADD" : "BF.EXISTS");
            put_bulk(&b, opt.key, keylen);
            put_bulk(&b, item, ilen);
            nreplies++;
            break;
          case PROXY_MADD:
            put_bulk(&b, item, ilen);
            break;
          case SETBIT:
          case SETBIT_MADD:
          case GETBIT:
            item_offsets(g, item, ilen, opt.remap, offs);
            for (unsigned j = 0; j < k; j++) {
              if (opt.mode == GETBIT) {
                put_header(&b, '*', 3);
                put_str(&b, "GETBIT");
              } else {
                put_header(&b, '*', 4);
                put_str(&b, "SETBIT");
              }
              put_bulk(&b, opt.key, keylen);
              put_u64(&b, offs[j]);
              if (opt.mode != GETBIT) put_bulk(&b, "1", 1);
            }
            nreplies += k;
            break;
          case LUA_ADD:
          case LUA_EXISTS:
            item_offsets(g, item, ilen, opt.remap, offs);
            put_header(&b, '*', 4 + (uint64_t)k);
            put_str(&b, "EVALSHA");
            put_bulk(&b, opt.sha, 40);
            put_bulk(&b, "1", 1);
            put_bulk(&b, opt.key, keylen);
            for (unsigned j = 0; j < k; j++) put_u64(&b, offs[j]);
            nreplies++;
            break;
          case BITFIELD_ADD:
          case BITFIELD_EXISTS:
            item_offsets(g, item, ilen, opt.remap, offs);
            if (opt.mode == BITFIELD_ADD) {
              put_header(&b, '*', 2 + 4 * (uint64_t)k);
              put_str(&b, "BITFIELD");
            } else {
              put_header(&b, '*', 2 + 3 * (uint64_t)k);
              put_str(&b, "BITFIELD_RO");
            }
            put_bulk(&b, opt.key, keylen);
            for (unsigned j = 0; j < k; j++) {
              put_str(&b, opt.mode == BITFIELD_ADD ? "SET" : "GET");
              put_bulk(&b, "u1", 2);
              put_u64(&b, offs[j]);
              if (opt.mode == BITFIELD_ADD) put_bulk(&b, "1", 1);
            }
            nreplies++;
            break;
          case SET_GET: {
            char key[160];
            int klen = snprintf(key, sizeof key, "%s:%d:%u", opt.key, w->index,
                                (unsigned)(w->counter++ % 4096));
            put_header(&b, '*', 3);
            put_str(&b, "SET");
            put_bulk(&b, key, (size_t)klen);
            put_bulk(&b, item, ilen);
            put_header(&b, '*', 2);
            put_str(&b, "GET");
            put_bulk(&b, key, (size_t)klen);
            memcpy(sg_vals[u], item, ilen);
            sg_lens[u] = ilen;
            nreplies += 2;
            break;
          }
        }
      }
      if (opt.mode == PROXY_MADD) nreplies++;
      batch_items += n_items;
    }
    if (redisAppendFormattedCommand(w->ctx, b.p, b.len) != REDIS_OK) {
      note_error(w, "cannot queue commands: %s", w->ctx->errstr);
      if (opt.keep_going && reconnect(w) == 0) continue;
      if (!opt.keep_going) atomic_store(&g_conn_failed, 1);
      break;
    }
    w->cmds += nreplies;

    /* Read the replies in order and fold them per item. */
    redisReply *r;
    int failed = 0;
    switch (opt.mode) {
      case PROXY_ADD:
      case PROXY_EXISTS:
      case LUA_ADD:
      case LUA_EXISTS:
        for (long long i = 0; i < nreplies && !failed; i++) {
          if (read_reply(w, &r)) { failed = 1; break; }
          if (int01(w, r) == 1) w->positives++;
          freeReplyObject(r);
        }
        break;
      case PROXY_MADD:
        for (long long i = 0; i < nreplies && !failed; i++) {
          if (read_reply(w, &r)) { failed = 1; break; }
          if (r->type != REDIS_REPLY_ARRAY) {
            int01(w, r); /* counts the error reply or wrong type */
          } else {
            for (size_t j = 0; j < r->elements; j++) {
              if (int01(w, r->element[j]) == 1) w->positives++;
            }
          }
          freeReplyObject(r);
        }
        break;
      case SETBIT:
      case SETBIT_MADD:
      case GETBIT:
        for (long long i = 0; i < batch_items && !failed; i++) {
          int any0 = 0;
          for (unsigned j = 0; j < k; j++) {
            if (read_reply(w, &r)) { failed = 1; break; }
            if (int01(w, r) == 0) any0 = 1;
            freeReplyObject(r);
          }
          /* add: new if any bit was 0; exists: may exist if none was 0 */
          if (opt.mode == GETBIT ? !any0 : any0) w->positives++;
        }
        break;
      case BITFIELD_ADD:
      case BITFIELD_EXISTS:
        for (long long i = 0; i < nreplies && !failed; i++) {
          if (read_reply(w, &r)) { failed = 1; break; }
          if (r->type != REDIS_REPLY_ARRAY || r->elements != k) {
            if (r->type == REDIS_REPLY_ARRAY) note_error(w, "BITFIELD reply has %s elements", "the wrong number of");
            else int01(w, r);
          } else {
            int any0 = 0;
            for (size_t j = 0; j < r->elements; j++) {
              if (int01(w, r->element[j]) == 0) any0 = 1;
            }
            if (opt.mode == BITFIELD_EXISTS ? !any0 : any0) w->positives++;
          }
          freeReplyObject(r);
        }
        break;
      case SET_GET:
        for (long long u = 0; u < batch_items && !failed; u++) {
          if (read_reply(w, &r)) { failed = 1; break; }
          int set_ok = r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
          if (r->type == REDIS_REPLY_ERROR) {
            note_error(w, "error reply: %s", r->str);
          } else if (!set_ok) {
            note_error(w, "unexpected %s reply to SET (want +OK)", reply_type_name(r->type));
          }
          freeReplyObject(r);
          if (read_reply(w, &r)) { failed = 1; break; }
          if (r->type == REDIS_REPLY_ERROR) {
            note_error(w, "error reply: %s", r->str);
          } else if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
            note_error(w, "unexpected %s reply to GET (want a bulk string)",
                       reply_type_name(r->type));
          } else if (set_ok && r->type == REDIS_REPLY_NIL) {
            note_error(w, "write lost: GET returned nil after the SET before it replied OK%s", "");
          } else if (set_ok && ((size_t)r->len != sg_lens[u] ||
                                memcmp(r->str, sg_vals[u], sg_lens[u]) != 0)) {
            note_error(w, "wrong value: GET returned %s, not the value the SET before it wrote",
                       r->len < 100 ? r->str : "a long string");
          } else if (set_ok) {
            w->positives++;
          }
          freeReplyObject(r);
        }
        break;
    }
    if (failed) {
      if (opt.keep_going && reconnect(w) == 0) continue;
      break;
    }
    w->ops += batch_items;
    left -= batch_items;
  }
  clock_gettime(CLOCK_MONOTONIC, &w->end);
  free(b.p);
  free(sg_vals);
  free(sg_lens);
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */

static double ts_diff(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static redisContext *connect_or_die(void) {
  struct timeval tv = {5, 0};
  redisContext *c = redisConnectWithTimeout(opt.host, opt.port, tv);
  if (!c || c->err) {
    fprintf(stderr, "bf_client: cannot connect to %s:%d: %s\n", opt.host, opt.port,
            c ? c->errstr : "out of memory");
    exit(2);
  }
  return c;
}

static void load_script(void) {
  redisContext *c = connect_or_die();
  const char *src = opt.mode == LUA_ADD ? kLuaAdd : kLuaExists;
  redisReply *r = redisCommand(c, "SCRIPT LOAD %s", src);
  if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
    fprintf(stderr, "bf_client: SCRIPT LOAD failed: %s\n",
            !r ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    exit(2);
  }
  memcpy(opt.sha, r->str, 40);
  opt.sha[40] = 0;
  freeReplyObject(r);
  redisFree(c);
}

int main(int argc, char **argv) {
  int geometry_only = 0, positions_only = 0, mode_set = 0, n_items_args = 0;
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE() do { if (!v) die_usage("missing value for", a); i++; } while (0)
    if (!strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "-h")) { NEED_VALUE(); opt.host = v; }
    else if (!strcmp(a, "-p")) { NEED_VALUE(); opt.port = (int)parse_ll(v, "bad port", 1); }
    else if (!strcmp(a, "-m")) {
      NEED_VALUE();
      int m;
      for (m = 0; m < N_MODES && strcmp(v, kModeNames[m]); m++) {}
      if (m == N_MODES) die_usage("unknown mode", v);
      opt.mode = (enum mode)m;
      mode_set = 1;
    }
    else if (!strcmp(a, "-c")) { NEED_VALUE(); opt.conns = (int)parse_ll(v, "bad -c", 1); }
    else if (!strcmp(a, "-P")) { NEED_VALUE(); opt.pipeline = (int)parse_ll(v, "bad -P", 1); }
    else if (!strcmp(a, "-n")) { NEED_VALUE(); opt.items = parse_ll(v, "bad -n", 1); }
    else if (!strcmp(a, "-t")) {
      NEED_VALUE();
      opt.secs = parse_double(v, "bad -t");
      if (!(opt.secs > 0)) die_usage("bad -t", v);
    }
    else if (!strcmp(a, "-k")) { NEED_VALUE(); opt.key = v; }
    else if (!strcmp(a, "-b")) { NEED_VALUE(); opt.batch = (int)parse_ll(v, "bad -b", 1); }
    else if (!strcmp(a, "--capacity")) {
      NEED_VALUE();
      opt.capacity = (uint64_t)parse_ll(v, "bad --capacity", 1);
    }
    else if (!strcmp(a, "--error")) {
      NEED_VALUE();
      opt.error = parse_double(v, "bad --error");
      if (!(opt.error > 0 && opt.error < 1)) die_usage("--error must be in (0, 1)", v);
    }
    else if (!strcmp(a, "--nonscaling")) opt.nonscaling = 1;
    else if (!strcmp(a, "--seed")) {
      NEED_VALUE();
      opt.seed = (uint64_t)parse_ll(v, "bad --seed", 0);
      opt.seed_set = 1;
    }
    else if (!strcmp(a, "--prefix")) {
      NEED_VALUE();
      if (strlen(v) > 64) die_usage("--prefix longer than 64 bytes", v);
      opt.prefix = v;
    }
    else if (!strcmp(a, "--no-remap")) opt.remap = 0;
    else if (!strcmp(a, "--keep-going")) opt.keep_going = 1;
    else if (!strcmp(a, "--error-log")) { NEED_VALUE(); opt.error_log = v; }
    else if (!strcmp(a, "--geometry")) geometry_only = 1;
    else if (!strcmp(a, "--positions")) positions_only = 1;
    else if (positions_only && a[0] != '-') n_items_args++, argv[n_items_args] = argv[i];
    else die_usage("unknown argument", a);
#undef NEED_VALUE
  }

  double err = opt.error;
  if (err > 0.25) err = 0.25; /* RedisBloom caps the error rate */
  opt.geo = size_link(opt.capacity, opt.nonscaling ? err : err / 2);
  if (opt.geo.k > MAX_K) die_usage("too many hash functions for this error rate", NULL);

  if (geometry_only) {
    printf("capacity=%" PRIu64 " error=%g bpe=%.6f bits=%" PRIu64 " bytes=%" PRIu64 " k=%u\n",
           opt.capacity, opt.geo.error, opt.geo.bpe, opt.geo.bits, opt.geo.bytes, opt.geo.k);
    return 0;
  }
  if (positions_only) {
    /* RedisBloom bit positions (not remapped) of each ITEM, one line per item. */
    uint64_t offs[MAX_K];
    for (i = 1; i <= n_items_args; i++) {
      unsigned k = item_offsets(&opt.geo, argv[i], strlen(argv[i]), 0, offs);
      printf("%s", argv[i]);
      for (unsigned j = 0; j < k; j++) printf(" %" PRIu64, offs[j]);
      printf("\n");
    }
    return 0;
  }

  if (!opt.port) die_usage("-p PORT is required", NULL);
  if (!mode_set) die_usage("-m MODE is required", NULL);
  if (opt.items && opt.secs > 0) die_usage("give -n or -t, not both", NULL);
  if (!opt.items && !(opt.secs > 0)) opt.secs = 5;
  if (!opt.key) {
    opt.key = opt.mode == SET_GET ? "sgk"
              : opt.mode <= PROXY_MADD ? "bfk"
              : (opt.mode == LUA_ADD || opt.mode == LUA_EXISTS) ? "bfk_lua"
                                                                   : "bfk_cs";
  }
  if (opt.mode >= SETBIT && opt.mode != SET_GET && opt.geo.bits > (1ULL << 32)) {
    fprintf(stderr, "bf_client: %" PRIu64 " bits is more than one Redis string can hold (2^32)\n",
            opt.geo.bits);
    return 2;
  }
  if (!opt.seed_set) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    opt.seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
  }
  if (opt.mode == LUA_ADD || opt.mode == LUA_EXISTS) load_script();

  worker_t *w = calloc((size_t)opt.conns, sizeof *w);
  pthread_t *th = calloc((size_t)opt.conns, sizeof *th);
  if (!w || !th) {
    perror("calloc");
    return 2;
  }
  pthread_barrier_init(&g_start, NULL, (unsigned)opt.conns + 1);
  for (int t = 0; t < opt.conns; t++) {
    w[t].index = t;
    w[t].rng = opt.seed + (uint64_t)t * 0x632be59bd9b4e019ULL;
    if (opt.items) w[t].quota = opt.items / opt.conns + (t < opt.items % opt.conns ? 1 : 0);
    w[t].ctx = connect_or_die();
    set_read_timeout(w[t].ctx);
  }
  for (int t = 0; t < opt.conns; t++) {
    int rc = pthread_create(&th[t], NULL, worker_main, &w[t]);
    if (rc) {
      fprintf(stderr, "bf_client: pthread_create: %s\n", strerror(rc));
      return 2;
    }
  }
  struct timespec t0;
  pthread_barrier_wait(&g_start);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!opt.items) {
    struct timespec deadline = t0;
    deadline.tv_sec += (time_t)opt.secs;
    deadline.tv_nsec += (long)((opt.secs - (double)(time_t)opt.secs) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {}
    atomic_store(&g_stop, 1);
  }
  long long ops = 0, cmds = 0, errors = 0, pos = 0, reconnects = 0;
  struct timespec end = t0;
  for (int t = 0; t < opt.conns; t++) {
    pthread_join(th[t], NULL);
    ops += w[t].ops;
    cmds += w[t].cmds;
    errors += w[t].errors;
    pos += w[t].positives;
    reconnects += w[t].reconnects;
    if (ts_diff(end, w[t].end) > 0) end = w[t].end;
    if (w[t].ctx) redisFree(w[t].ctx);
  }
  double secs = ts_diff(t0, end);
  if (secs <= 0) secs = 1e-9;
  printf("mode=%s clients=%d pipeline=%d ops=%lld secs=%.3f ops_per_sec=%.0f cmds=%lld "
         "cmds_per_sec=%.0f errors=%lld positive_pct=%.2f",
         kModeNames[opt.mode], opt.conns, opt.pipeline, ops, secs, (double)ops / secs, cmds,
         (double)cmds / secs, errors, ops ? 100.0 * (double)pos / (double)ops : 0.0);
  if (opt.keep_going) printf(" reconnects=%lld", reconnects);
  printf("\n");
  fflush(stdout);
  write_error_log();
  if (errors) fprintf(stderr, "bf_client: %lld error(s); first: %s\n", errors, g_first_error);
  free(w);
  free(th);
  if (atomic_load(&g_conn_failed)) return 2;
  return errors ? 1 : 0;
}
