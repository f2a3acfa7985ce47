// The Guava oracle of tests/integration/test_guava_layouts.py: the real Guava 31.1
// (com.google.common.hash.BloomFilter) answering for the filters a Java application keeps in
// plain Redis strings, so the tests can compare bloomproxy's bf-layout rules with Guava bit for
// bit. Driven by guava_oracle.py; build and run:
//
//   javac -cp /usr/share/java/guava.jar -d OUT GuavaOracle.java
//   java -cp OUT:/usr/share/java/guava.jar GuavaOracle
//
// Protocol: one command per line on stdin, exactly one answer line on stdout per command:
// "OK[ ...]" or "ERR <message>". Items are written "x<hex of the item's bytes>" (so the empty
// item is "x" and any byte passes). Filters are named by the caller's id.
//
//   NEW id LAYOUT CAPACITY ERROR FUNNEL  -> OK k m    a new empty filter
//       LAYOUT: guava (BloomFilter.create(funnel, n, p)), guava-mitz32 (the package-private
//       BloomFilter.create(funnel, n, p, BloomFilterStrategies.MURMUR128_MITZ_32), called by
//       reflection), guava-unrounded (the Jedis/Codis "RedisBloomFilter" pattern: int m, MITZ_64
//       indexes mod m, a java.util.BitSet), guava-mitz32-unrounded (the widely copied
//       "BloomFilterHelper" class: int bitSize, Hashing.murmur3_128().asLong() split into two
//       ints, MITZ_32's index loop mod bitSize, a java.util.BitSet).
//       FUNNEL: utf8 | utf16le | int64le.
//   ADD id ITEM...      -> OK 1|0 ...   put() of each item, in order
//   HAS id ITEM...      -> OK 1|0 ...   mightContain() of each item
//   BITS id             -> OK j ...     the set bit indexes, ascending
//   CARD id             -> OK n         approximateElementCount()
//   INFO id             -> OK k m s     numHashFunctions, bit size, the serialized strategy
//                                       ordinal (-1 for the unrounded layouts)
//   LOAD id j...        -> OK           the state becomes exactly these set bits (readFrom() of a
//                                       constructed stream for the Guava layouts)
//   INDEXES id ITEM...  -> OK a,b,c ... per item, the bits one put() of it sets alone (a fresh
//                                       filter of the same parameters), ascending; "-" if none
//   SER id              -> OK hex       writeTo() of the filter (Guava layouts)
//   FREE id             -> OK
//   PING                -> OK pong
// A bad item for the int64le funnel (Long.parseLong refuses it) -> ERR NumberFormatException.

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import com.google.common.hash.HashCode;
import com.google.common.hash.Hashing;
import com.google.common.math.DoubleMath;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

public final class GuavaOracle {

  /** Turns an item's bytes into the Java object a Java application would put. */
  enum FunnelKind {
    UTF8,
    UTF16LE,
    INT64LE;

    static FunnelKind parse(String s) {
      switch (s) {
        case "utf8":
          return UTF8;
        case "utf16le":
          return UTF16LE;
        case "int64le":
          return INT64LE;
        default:
          throw new IllegalArgumentException("unknown funnel " + s);
      }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    Funnel<Object> funnel() {
      switch (this) {
        case UTF8:
          return (Funnel) Funnels.stringFunnel(StandardCharsets.UTF_8);
        case UTF16LE:
          return (Funnel) Funnels.unencodedCharsFunnel();
        default:
          return (Funnel) Funnels.longFunnel();
      }
    }

    Object item(byte[] bytes) {
      String s = new String(bytes, StandardCharsets.UTF_8);
      return this == INT64LE ? (Object) Long.parseLong(s) : (Object) s;
    }
  }

  /** One filter of a layout. */
  abstract static class Filter {
    final FunnelKind funnelKind;
    final Funnel<Object> funnel;

    Filter(FunnelKind funnelKind) {
      this.funnelKind = funnelKind;
      this.funnel = funnelKind.funnel();
    }

    abstract boolean put(Object item);

    abstract boolean mightContain(Object item);

    abstract long[] bits(); // ascending

    abstract long approximateElementCount();

    abstract int k();

    abstract long m();

    abstract int strategyOrdinal();

    abstract void load(long[] indexes) throws IOException;

    abstract Filter fresh() throws Exception;

    abstract byte[] serialized() throws IOException;
  }

  /** A real com.google.common.hash.BloomFilter (layouts guava and guava-mitz32). */
  static final class GuavaFilter extends Filter {
    final String layout;
    final long n;
    final double p;
    BloomFilter<Object> bf;

    GuavaFilter(String layout, long n, double p, FunnelKind fk) throws Exception {
      super(fk);
      this.layout = layout;
      this.n = n;
      this.p = p;
      this.bf = create(layout, funnel, n, p);
    }

    @SuppressWarnings("unchecked")
    static BloomFilter<Object> create(String layout, Funnel<Object> funnel, long n, double p)
        throws Exception {
      if (layout.equals("guava")) {
        return BloomFilter.create(funnel, n, p);
      }
      // guava-mitz32: BloomFilter.create(Funnel, long, double, Strategy) is package-private
      // (@VisibleForTesting), as is the enum BloomFilterStrategies. Guava is on the class path
      // (the unnamed module), so setAccessible needs no --add-opens.
      Class<?> strategies = Class.forName("com.google.common.hash.BloomFilterStrategies");
      Class<?> strategyIface = Class.forName("com.google.common.hash.BloomFilter$Strategy");
      Field f = strategies.getDeclaredField("MURMUR128_MITZ_32");
      f.setAccessible(true);
      Object mitz32 = f.get(null);
      Method m =
          BloomFilter.class.getDeclaredMethod(
              "create", Funnel.class, long.class, double.class, strategyIface);
      m.setAccessible(true);
      return (BloomFilter<Object>) m.invoke(null, funnel, n, p, mitz32);
    }

    @Override
    boolean put(Object item) {
      return bf.put(item);
    }

    @Override
    boolean mightContain(Object item) {
      return bf.mightContain(item);
    }

    /** writeTo(): byte strategy ordinal, byte numHashFunctions, int longCount, longs (BE). */
    @Override
    byte[] serialized() throws IOException {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      bf.writeTo(out);
      return out.toByteArray();
    }

    long[] words() throws IOException {
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized()));
      in.readByte();
      in.readByte();
      int count = in.readInt();
      long[] words = new long[count];
      for (int i = 0; i < count; i++) {
        words[i] = in.readLong();
      }
      return words;
    }

    @Override
    long[] bits() {
      try {
        long[] words = words();
        List<Long> out = new ArrayList<>();
        for (int w = 0; w < words.length; w++) {
          for (int b = 0; b < 64; b++) {
            if ((words[w] >>> b & 1L) != 0) {
              out.add(64L * w + b); // Guava bit j is bit j % 64 of long j / 64
            }
          }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    long approximateElementCount() {
      return bf.approximateElementCount();
    }

    byte[] header() throws IOException {
      return serialized();
    }

    @Override
    int k() {
      try {
        return header()[1] & 0xff;
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    long m() {
      try {
        return 64L * words().length;
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    int strategyOrdinal() {
      try {
        return header()[0];
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    /** readFrom() of a stream in writeTo()'s format holding exactly these bits. */
    @Override
    void load(long[] indexes) throws IOException {
      byte[] head = serialized();
      long[] words = new long[(int) (m() / 64)];
      for (long j : indexes) {
        if (j < 0 || j >= 64L * words.length) {
          throw new IllegalArgumentException("bit " + j + " out of range");
        }
        words[(int) (j / 64)] |= 1L << (j % 64);
      }
      ByteArrayOutputStream buf = new ByteArrayOutputStream();
      DataOutputStream out = new DataOutputStream(buf);
      out.writeByte(head[0]);
      out.writeByte(head[1]);
      out.writeInt(words.length);
      for (long w : words) {
        out.writeLong(w);
      }
      out.flush();
      bf = BloomFilter.readFrom(new ByteArrayInputStream(buf.toByteArray()), funnel);
    }

    @Override
    Filter fresh() throws Exception {
      return new GuavaFilter(layout, n, p, funnelKind);
    }
  }

  /**
   * A filter kept the way the copied Redis helper classes keep it: an int bit count that is not
   * rounded, SETBIT offsets (here a java.util.BitSet). Subclasses give the sizing and offsets.
   */
  abstract static class BitSetFilter extends Filter {
    final String layout;
    final long n;
    final double p;
    BitSet bits = new BitSet();

    BitSetFilter(String layout, long n, double p, FunnelKind fk) {
      super(fk);
      this.layout = layout;
      this.n = n;
      this.p = p;
    }

    /** The SETBIT offsets of an item (put() sets them, mightContain() tests them). */
    abstract long[] offsets(Object item);

    @Override
    boolean put(Object item) {
      boolean changed = false;
      for (long j : offsets(item)) {
        if (!bits.get((int) j)) {
          bits.set((int) j);
          changed = true;
        }
      }
      return changed;
    }

    @Override
    boolean mightContain(Object item) {
      for (long j : offsets(item)) {
        if (!bits.get((int) j)) {
          return false;
        }
      }
      return true;
    }

    @Override
    long[] bits() {
      return bits.stream().mapToLong(i -> i).toArray();
    }

    /** Guava's approximateElementCount with bitSize = m. */
    @Override
    long approximateElementCount() {
      long bitSize = m();
      long bitCount = bits.cardinality();
      double fractionOfBitsSet = (double) bitCount / bitSize;
      return DoubleMath.roundToLong(
          -Math.log1p(-fractionOfBitsSet) * bitSize / k(), RoundingMode.HALF_UP);
    }

    @Override
    int strategyOrdinal() {
      return -1;
    }

    @Override
    void load(long[] indexes) {
      BitSet b = new BitSet();
      for (long j : indexes) {
        if (j < 0 || j >= m()) {
          throw new IllegalArgumentException("bit " + j + " out of range");
        }
        b.set((int) j);
      }
      bits = b;
    }

    @Override
    Filter fresh() throws Exception {
      return newFilter(layout, n, p, funnelKind);
    }

    @Override
    byte[] serialized() {
      throw new UnsupportedOperationException(layout + " has no Guava serialization");
    }
  }

  /**
   * The widely copied Jedis/Codis "RedisBloomFilter": Guava's sizing with an int cast and no
   * rounding of the bit array, Hashing.murmur3_128() with the MITZ_64 index formula mod m.
   */
  static final class UnroundedFilter extends BitSetFilter {
    final int numBits;
    final int numHashFunctions;

    UnroundedFilter(long n, double p, FunnelKind fk) {
      super("guava-unrounded", n, p, fk);
      long insertions = n == 0 ? 1 : n;
      this.numBits = (int) (-insertions * Math.log(p) / (Math.log(2) * Math.log(2)));
      this.numHashFunctions =
          Math.max(1, (int) Math.round((double) numBits / insertions * Math.log(2)));
    }

    @Override
    long[] offsets(Object item) {
      HashCode hash = Hashing.murmur3_128().hashObject(item, funnel);
      byte[] bytes = hash.asBytes();
      long hash1 = lowerEight(bytes);
      long hash2 = upperEight(bytes);
      long[] out = new long[numHashFunctions];
      long combinedHash = hash1;
      for (int i = 0; i < numHashFunctions; i++) {
        out[i] = (combinedHash & Long.MAX_VALUE) % numBits;
        combinedHash += hash2;
      }
      return out;
    }

    static long lowerEight(byte[] b) {
      long v = 0;
      for (int i = 7; i >= 0; i--) {
        v = (v << 8) | (b[i] & 0xffL);
      }
      return v;
    }

    static long upperEight(byte[] b) {
      long v = 0;
      for (int i = 15; i >= 8; i--) {
        v = (v << 8) | (b[i] & 0xffL);
      }
      return v;
    }

    @Override
    int k() {
      return numHashFunctions;
    }

    @Override
    long m() {
      return numBits;
    }
  }

  /**
   * The widely copied "BloomFilterHelper" class (Redis + Guava's Hashing.murmur3_128()), its
   * sizing and murmurHashOffset() as written there: an int bitSize, not rounded; the 64-bit
   * asLong() of the hash split into two ints; MURMUR128_MITZ_32's index loop mod bitSize.
   */
  static final class Mitz32UnroundedFilter extends BitSetFilter {
    final int bitSize;
    final int numHashFunctions;

    Mitz32UnroundedFilter(long n, double p, FunnelKind fk) {
      super("guava-mitz32-unrounded", n, p, fk);
      long expectedInsertions = n == 0 ? 1 : n; // the proxy takes capacity 0 as 1
      this.bitSize = optimalNumOfBits(expectedInsertions, p);
      this.numHashFunctions = optimalNumOfHashFunctions(expectedInsertions, bitSize);
    }

    private static int optimalNumOfBits(long n, double p) {
      if (p == 0) {
        p = Double.MIN_VALUE;
      }
      return (int) (-n * Math.log(p) / (Math.log(2) * Math.log(2)));
    }

    private static int optimalNumOfHashFunctions(long n, long m) {
      return Math.max(1, (int) Math.round((double) m / n * Math.log(2)));
    }

    /** BloomFilterHelper.murmurHashOffset(value). */
    int[] murmurHashOffset(Object value) {
      int[] offset = new int[numHashFunctions];
      long hash64 = Hashing.murmur3_128().hashObject(value, funnel).asLong();
      int hash1 = (int) hash64;
      int hash2 = (int) (hash64 >>> 32);
      for (int i = 1; i <= numHashFunctions; i++) {
        int nextHash = hash1 + i * hash2;
        if (nextHash < 0) {
          nextHash = ~nextHash;
        }
        offset[i - 1] = nextHash % bitSize;
      }
      return offset;
    }

    @Override
    long[] offsets(Object item) {
      int[] offset = murmurHashOffset(item);
      long[] out = new long[offset.length];
      for (int i = 0; i < offset.length; i++) {
        out[i] = offset[i];
      }
      return out;
    }

    @Override
    int k() {
      return numHashFunctions;
    }

    @Override
    long m() {
      return bitSize;
    }
  }

  static Filter newFilter(String layout, long n, double p, FunnelKind fk) throws Exception {
    switch (layout) {
      case "guava":
      case "guava-mitz32":
        return new GuavaFilter(layout, n, p, fk);
      case "guava-unrounded":
        return new UnroundedFilter(n, p, fk);
      case "guava-mitz32-unrounded":
        return new Mitz32UnroundedFilter(n, p, fk);
      default:
        throw new IllegalArgumentException("unknown layout " + layout);
    }
  }

  static byte[] unhex(String token) {
    if (!token.startsWith("x")) {
      throw new IllegalArgumentException("an item must be written x<hex>: " + token);
    }
    String hex = token.substring(1);
    byte[] out = new byte[hex.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder();
    for (byte b : bytes) {
      sb.append(String.format("%02x", b & 0xff));
    }
    return sb.toString();
  }

  static String join(long[] values) {
    StringBuilder sb = new StringBuilder();
    for (long v : values) {
      sb.append(' ').append(v);
    }
    return sb.toString();
  }

  final Map<String, Filter> filters = new HashMap<>();

  Filter get(String id) {
    Filter f = filters.get(id);
    if (f == null) {
      throw new IllegalArgumentException("no filter " + id);
    }
    return f;
  }

  /** Converts every item first, so a bad item changes nothing. */
  static List<Object> items(Filter f, String[] words) {
    List<Object> out = new ArrayList<>();
    for (int i = 2; i < words.length; i++) {
      out.add(f.funnelKind.item(unhex(words[i])));
    }
    return out;
  }

  String handle(String line) throws Exception {
    String[] w = line.trim().split(" ");
    StringBuilder sb = new StringBuilder("OK");
    switch (w[0]) {
      case "PING":
        return "OK pong";
      case "NEW":
        {
          Filter f =
              newFilter(
                  w[2], Long.parseLong(w[3]), Double.parseDouble(w[4]), FunnelKind.parse(w[5]));
          filters.put(w[1], f);
          return "OK " + f.k() + " " + f.m();
        }
      case "ADD":
        {
          Filter f = get(w[1]);
          for (Object item : items(f, w)) {
            sb.append(f.put(item) ? " 1" : " 0");
          }
          return sb.toString();
        }
      case "HAS":
        {
          Filter f = get(w[1]);
          for (Object item : items(f, w)) {
            sb.append(f.mightContain(item) ? " 1" : " 0");
          }
          return sb.toString();
        }
      case "BITS":
        return "OK" + join(get(w[1]).bits());
      case "CARD":
        return "OK " + get(w[1]).approximateElementCount();
      case "INFO":
        {
          Filter f = get(w[1]);
          return "OK " + f.k() + " " + f.m() + " " + f.strategyOrdinal();
        }
      case "LOAD":
        {
          long[] indexes = new long[w.length - 2];
          for (int i = 2; i < w.length; i++) {
            indexes[i - 2] = Long.parseLong(w[i]);
          }
          get(w[1]).load(indexes);
          return "OK";
        }
      case "INDEXES":
        {
          Filter f = get(w[1]);
          for (Object item : items(f, w)) {
            Filter one = f.fresh();
            one.put(item);
            long[] b = one.bits();
            TreeSet<Long> sorted = new TreeSet<>();
            for (long j : b) {
              sorted.add(j);
            }
            StringBuilder t = new StringBuilder();
            for (long j : sorted) {
              t.append(t.length() == 0 ? "" : ",").append(j);
            }
            sb.append(' ').append(t.length() == 0 ? "-" : t.toString());
          }
          return sb.toString();
        }
      case "SER":
        return "OK " + hex(get(w[1]).serialized());
      case "FREE":
        filters.remove(w[1]);
        return "OK";
      default:
        throw new IllegalArgumentException("unknown command " + w[0]);
    }
  }

  public static void main(String[] args) throws IOException {
    GuavaOracle oracle = new GuavaOracle();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    BufferedWriter out =
        new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      String answer;
      try {
        answer = oracle.handle(line);
      } catch (Exception e) {
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        answer = ("ERR " + cause.getClass().getSimpleName() + " " + cause.getMessage())
            .replace('\n', ' ');
      }
      out.write(answer);
      out.write('\n');
      out.flush();
    }
  }
}
