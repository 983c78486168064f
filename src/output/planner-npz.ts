// NumPy .npz writer: an .npz is a zip archive of .npy files (numpy.savez writes them stored, without
// compression). Enough of both formats to hand float64 / int64 arrays to numpy.load; nothing else.
import { crc32 } from 'node:zlib';

export interface NpyArray {
  /** Row-major values. */
  data: readonly number[];
  /** Dimensions; their product is data.length. */
  shape: readonly number[];
  dtype: 'float64' | 'int64';
}

const DESCR = { float64: '<f8', int64: '<i8' } as const;

/** One .npy file, format version 1.0: magic, header length, a Python dict literal padded to 64 bytes, the data. */
export function npyBytes(a: NpyArray): Buffer {
  const count = a.shape.reduce((x, y) => x * y, 1);
  if (count !== a.data.length) throw new Error(`npy: shape ${a.shape.join('x')} does not hold ${a.data.length} values`);
  const shape = a.shape.length === 1 ? `(${a.shape[0]},)` : `(${a.shape.join(', ')})`;
  let header = `{'descr': '${DESCR[a.dtype]}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
  const pad = 64 - ((10 + header.length + 1) % 64);
  header = header + ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(8 * count);
  a.data.forEach((v, i) => {
    if (a.dtype === 'int64') body.writeBigInt64LE(BigInt(Math.round(v)), 8 * i);
    else body.writeDoubleLE(v, 8 * i);
  });
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

/** A zip archive of stored (uncompressed) entries with a fixed timestamp, so reruns are byte-identical. */
export function zipStored(entries: ReadonlyArray<{ name: string; data: Buffer }>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  // 1980-01-01 00:00, the earliest DOS date.
  const dosTime = 0;
  const dosDate = (0 << 9) | (1 << 5) | 1;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const crc = crc32(e.data) >>> 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0, 6); // flags
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt16LE(dosTime, 10);
    local.writeUInt16LE(dosDate, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(e.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, zip 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt16LE(dosTime, 12);
    central.writeUInt16LE(dosDate, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(e.data.length, 20);
    central.writeUInt32LE(e.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(0, 30); // extra + comment lengths
    central.writeUInt32LE(0, 34); // disk number + internal attributes
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // external attributes: a regular file
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.data);
    centrals.push(central, name);
    offset += local.length + name.length + e.data.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

/** An .npz of named arrays (each stored as `<name>.npy`, as numpy.savez does). */
export function npzBytes(arrays: Record<string, NpyArray>): Buffer {
  return zipStored(Object.entries(arrays).map(([name, a]) => ({ name: `${name}.npy`, data: npyBytes(a) })));
}
