/**
 * Reads the frames a Python child writes on its fd 3 (`child.mjs`): one byte of kind, four of
 * length (big-endian), then the payload. Each frame's length is checked against its kind's limit
 * before any of it is kept, so a child cannot make the parent hold more than that.
 */

export type FrameKind = 'S' | 'M';

export class FrameError extends Error {
  override readonly name = 'FrameError';
}

const headerBytes = 5;

/**
 * A reader: give it each chunk read; it calls `onFrame` with each whole frame, and throws a
 * `FrameError` on a kind it does not know or a length over `maxBytes` of that kind.
 */
export const frameReader = (
  maxBytes: Readonly<Record<FrameKind, number>>,
  onFrame: (kind: FrameKind, payload: Buffer) => void,
) => {
  const header = Buffer.alloc(headerBytes);
  let headerFilled = 0;
  let kind: FrameKind = 'M';
  let body: Buffer | undefined;
  let bodyFilled = 0;
  return (chunk: Buffer) => {
    let offset = 0;
    while (offset < chunk.length) {
      if (!body) {
        const taken = chunk.copy(header, headerFilled, offset, offset + headerBytes - headerFilled);
        headerFilled += taken;
        offset += taken;
        if (headerFilled < headerBytes) return;
        headerFilled = 0;
        const letter = String.fromCharCode(header[0] ?? 0);
        if (letter !== 'S' && letter !== 'M') throw new FrameError(`unknown frame kind ${JSON.stringify(letter)}`);
        kind = letter;
        const length = header.readUInt32BE(1);
        if (length > maxBytes[kind]) throw new FrameError(`a ${kind} frame of ${length} bytes, over ${maxBytes[kind]}`);
        body = Buffer.allocUnsafe(length);
        bodyFilled = 0;
      }
      const taken = chunk.copy(body, bodyFilled, offset, offset + body.length - bodyFilled);
      bodyFilled += taken;
      offset += taken;
      if (bodyFilled === body.length) {
        const payload = body;
        body = undefined;
        onFrame(kind, payload);
      }
    }
  };
};
