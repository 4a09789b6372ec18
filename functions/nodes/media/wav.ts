/** RIFF/WAVE files: 16-bit PCM encoding and chunk reading (what the sandbox makes and the marker edits). */

export interface RiffChunk {
  id: string;
  data: Uint8Array;
}

class InvalidWavError extends Error {
  override readonly name = 'InvalidWavError';
}

const fourCc = (bytes: Uint8Array, offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4));

export const isWav = (bytes: Uint8Array): boolean =>
  bytes.length >= 12 && fourCc(bytes, 0) === 'RIFF' && fourCc(bytes, 8) === 'WAVE';

/** The chunks of a WAVE file after the RIFF header, checking that each fits the file. */
export const readWavChunks = (bytes: Uint8Array): RiffChunk[] => {
  if (!isWav(bytes)) throw new InvalidWavError('Not a WAVE file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riffEnd = 8 + view.getUint32(4, true);
  if (riffEnd > bytes.length) throw new InvalidWavError('RIFF size larger than the file');
  const chunks: RiffChunk[] = [];
  let offset = 12;
  while (offset + 8 <= riffEnd) {
    const id = fourCc(bytes, offset);
    const size = view.getUint32(offset + 4, true);
    if (offset + 8 + size > riffEnd) throw new InvalidWavError(`Chunk ${id} runs past the end`);
    chunks.push({ id, data: bytes.subarray(offset + 8, offset + 8 + size) });
    offset += 8 + size + (size % 2);
  }
  if (!chunks.some((c) => c.id === 'fmt ') || !chunks.some((c) => c.id === 'data')) {
    throw new InvalidWavError('WAVE file without fmt or data chunk');
  }
  return chunks;
};

/** Joins chunks into a WAVE file (pad bytes and the RIFF size computed). */
export const writeWavChunks = (chunks: readonly RiffChunk[]): Uint8Array => {
  const body = chunks.reduce((sum, c) => sum + 8 + c.data.length + (c.data.length % 2), 0);
  const out = new Uint8Array(12 + body);
  const view = new DataView(out.buffer);
  const enc = new TextEncoder();
  out.set(enc.encode('RIFF'), 0);
  view.setUint32(4, 4 + body, true);
  out.set(enc.encode('WAVE'), 8);
  let offset = 12;
  for (const chunk of chunks) {
    out.set(enc.encode(chunk.id.padEnd(4, ' ').slice(0, 4)), offset);
    view.setUint32(offset + 4, chunk.data.length, true);
    out.set(chunk.data, offset + 8);
    offset += 8 + chunk.data.length + (chunk.data.length % 2);
  }
  return out;
};

export interface WavFormat {
  audioFormat: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
}

export const readWavFormat = (bytes: Uint8Array): WavFormat & { dataBytes: number } => {
  const chunks = readWavChunks(bytes);
  const fmt = chunks.find((c) => c.id === 'fmt ')?.data as Uint8Array;
  if (fmt.length < 16) throw new InvalidWavError('fmt chunk too short');
  const view = new DataView(fmt.buffer, fmt.byteOffset, fmt.byteLength);
  return {
    audioFormat: view.getUint16(0, true),
    channels: view.getUint16(2, true),
    sampleRate: view.getUint32(4, true),
    bitsPerSample: view.getUint16(14, true),
    dataBytes: chunks.find((c) => c.id === 'data')?.data.length ?? 0,
  };
};

/** A mono 16-bit PCM WAVE file of `samples`. */
export const encodeWav = (samples: Int16Array, sampleRate: number): Uint8Array => {
  const fmt = new Uint8Array(16);
  const view = new DataView(fmt.buffer);
  view.setUint16(0, 1, true); // PCM
  view.setUint16(2, 1, true); // mono
  view.setUint32(4, sampleRate, true);
  view.setUint32(8, sampleRate * 2, true); // byte rate
  view.setUint16(12, 2, true); // block align
  view.setUint16(14, 16, true);
  const data = new Uint8Array(samples.length * 2);
  const dataView = new DataView(data.buffer);
  samples.forEach((s, i) => {
    dataView.setInt16(i * 2, s, true);
  });
  return writeWavChunks([
    { id: 'fmt ', data: fmt },
    { id: 'data', data },
  ]);
};
