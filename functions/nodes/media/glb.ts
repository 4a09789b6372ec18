/** Binary glTF 2.0 (GLB): one JSON chunk and an optional BIN chunk (Khronos glTF 2.0, section 4.4). */

class InvalidGlbError extends Error {
  override readonly name = 'InvalidGlbError';
}

const GLB_MAGIC = 0x46546c67; // 'glTF'
const JSON_CHUNK = 0x4e4f534a; // 'JSON'
const BIN_CHUNK = 0x004e4942; // 'BIN\0'

export interface Glb {
  json: Record<string, unknown>;
  bin: Uint8Array | undefined;
}

export const isGlb = (bytes: Uint8Array): boolean =>
  bytes.length >= 12 && new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true) === GLB_MAGIC;

export const readGlb = (bytes: Uint8Array): Glb => {
  if (!isGlb(bytes)) throw new InvalidGlbError('Not a GLB file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(4, true) !== 2) throw new InvalidGlbError('Only glTF 2.0 is supported');
  if (view.getUint32(8, true) !== bytes.length) throw new InvalidGlbError('GLB length does not match the file');
  let offset = 12;
  let json: Record<string, unknown> | undefined;
  let bin: Uint8Array | undefined;
  while (offset + 8 <= bytes.length) {
    const length = view.getUint32(offset, true);
    const type = view.getUint32(offset + 4, true);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (data.length !== length) throw new InvalidGlbError('Chunk runs past the end');
    if (type === JSON_CHUNK && !json) {
      try {
        json = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>;
      } catch {
        throw new InvalidGlbError('JSON chunk is not JSON');
      }
    } else if (type === BIN_CHUNK && !bin) bin = data;
    offset += 8 + length;
  }
  if (!json) throw new InvalidGlbError('GLB without JSON chunk');
  return { json, bin };
};

const padded = (data: Uint8Array, fill: number): Uint8Array => {
  const out = new Uint8Array(Math.ceil(data.length / 4) * 4).fill(fill);
  out.set(data);
  return out;
};

export const writeGlb = ({ json, bin }: Glb): Uint8Array => {
  const jsonBytes = padded(new TextEncoder().encode(JSON.stringify(json)), 0x20);
  const binBytes = bin ? padded(bin, 0) : undefined;
  const total = 12 + 8 + jsonBytes.length + (binBytes ? 8 + binBytes.length : 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, GLB_MAGIC, true);
  view.setUint32(4, 2, true);
  view.setUint32(8, total, true);
  view.setUint32(12, jsonBytes.length, true);
  view.setUint32(16, JSON_CHUNK, true);
  out.set(jsonBytes, 20);
  if (binBytes) {
    const at = 20 + jsonBytes.length;
    view.setUint32(at, binBytes.length, true);
    view.setUint32(at + 4, BIN_CHUNK, true);
    out.set(binBytes, at + 8);
  }
  return out;
};

/** A triangle mesh: positions (x, y, z per vertex) and triangle vertex indices. */
export interface TriangleMesh {
  positions: Float32Array;
  indices: Uint32Array;
}

/** A GLB with one mesh of one triangle primitive (indices as UNSIGNED_INT). */
export const meshToGlb = (mesh: TriangleMesh, extras: Record<string, unknown> = {}): Uint8Array => {
  const { positions, indices } = mesh;
  const positionBytes = new Uint8Array(positions.buffer, positions.byteOffset, positions.byteLength);
  const indexBytes = new Uint8Array(indices.buffer, indices.byteOffset, indices.byteLength);
  const bin = new Uint8Array(positionBytes.length + indexBytes.length);
  bin.set(positionBytes, 0);
  bin.set(indexBytes, positionBytes.length);
  const min = [Infinity, Infinity, Infinity];
  const max = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i++) {
    const axis = i % 3;
    const value = positions[i] as number;
    min[axis] = Math.min(min[axis] as number, value);
    max[axis] = Math.max(max[axis] as number, value);
  }
  const json = {
    asset: { version: '2.0', generator: 'workflow-run-api', ...(Object.keys(extras).length ? { extras } : {}) },
    scene: 0,
    scenes: [{ nodes: [0] }],
    nodes: [{ mesh: 0 }],
    meshes: [{ primitives: [{ attributes: { POSITION: 0 }, indices: 1, mode: 4 }] }],
    buffers: [{ byteLength: bin.length }],
    bufferViews: [
      { buffer: 0, byteOffset: 0, byteLength: positionBytes.length, target: 34962 },
      { buffer: 0, byteOffset: positionBytes.length, byteLength: indexBytes.length, target: 34963 },
    ],
    accessors: [
      { bufferView: 0, componentType: 5126, count: positions.length / 3, type: 'VEC3', min, max },
      { bufferView: 1, componentType: 5125, count: indices.length, type: 'SCALAR' },
    ],
  };
  return writeGlb({ json, bin });
};

interface Accessor {
  bufferView: number;
  byteOffset?: number;
  componentType: number;
  count: number;
  type: string;
}
interface BufferView {
  byteOffset?: number;
  byteLength: number;
  byteStride?: number;
}

/** The first triangle primitive of a GLB as a TriangleMesh (tightly packed float positions). */
export const glbToMesh = (bytes: Uint8Array): TriangleMesh => {
  const { json, bin } = readGlb(bytes);
  const meshes = json.meshes as {
    primitives?: { attributes?: { POSITION?: number }; indices?: number; mode?: number }[];
  }[];
  const primitive = meshes?.[0]?.primitives?.[0];
  const accessors = json.accessors as Accessor[] | undefined;
  const views = json.bufferViews as BufferView[] | undefined;
  if (!primitive || !accessors || !views || !bin || primitive.attributes?.POSITION === undefined) {
    throw new InvalidGlbError('GLB has no triangle mesh in its binary chunk');
  }
  if ((primitive.mode ?? 4) !== 4) throw new InvalidGlbError('Only triangle lists are supported');
  const slice = (accessorIndex: number, size: number, componentBytes: number) => {
    const accessor = accessors[accessorIndex];
    const view = accessor ? views[accessor.bufferView] : undefined;
    if (!accessor || !view || (view.byteStride && view.byteStride !== size * componentBytes)) {
      throw new InvalidGlbError('Unsupported accessor layout');
    }
    const start = (view.byteOffset ?? 0) + (accessor.byteOffset ?? 0);
    const length = accessor.count * size * componentBytes;
    if (start + length > bin.length) throw new InvalidGlbError('Accessor runs past the buffer');
    return { accessor, bytes: bin.slice(start, start + length) };
  };
  const position = slice(primitive.attributes.POSITION, 3, 4);
  if (position.accessor.componentType !== 5126) throw new InvalidGlbError('Positions must be floats');
  const positions = new Float32Array(position.bytes.buffer);
  let indices: Uint32Array;
  if (primitive.indices === undefined) indices = Uint32Array.from({ length: positions.length / 3 }, (_, i) => i);
  else {
    const type = accessors[primitive.indices]?.componentType;
    const width = type === 5125 ? 4 : type === 5123 ? 2 : type === 5121 ? 1 : 0;
    if (!width) throw new InvalidGlbError('Unsupported index type');
    const { bytes: raw } = slice(primitive.indices, 1, width);
    const source = width === 4 ? new Uint32Array(raw.buffer) : width === 2 ? new Uint16Array(raw.buffer) : raw;
    indices = Uint32Array.from(source);
  }
  return { positions, indices };
};

/** A GLB's triangles as Wavefront OBJ text, marked as AI-generated in its first comment line. */
export const glbAsObj = (bytes: Uint8Array): { body: Uint8Array; contentType: string } => {
  const { positions, indices } = glbToMesh(bytes);
  const lines = ['# AI-generated: trainedAlgorithmicMedia'];
  for (let i = 0; i < positions.length; i += 3) lines.push(`v ${positions[i]} ${positions[i + 1]} ${positions[i + 2]}`);
  for (let i = 0; i < indices.length; i += 3) {
    lines.push(`f ${(indices[i] as number) + 1} ${(indices[i + 1] as number) + 1} ${(indices[i + 2] as number) + 1}`);
  }
  return { body: new TextEncoder().encode(`${lines.join('\n')}\n`), contentType: 'model/obj' };
};
