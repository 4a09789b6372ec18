/** Pixel operations on RGBA images (the sandbox provider's "models" and the image nodes). */
import { InvalidPngError, makeImage, maxPixels, pixelAt, type RgbaImage } from './png.ts';

type Rgba = [number, number, number, number];

const clamp = (v: number) => Math.max(0, Math.min(255, Math.round(v)));

/** Relative luminance 0..255 of pixel (x, y) (Rec. 709 weights), edges clamped. */
const luminanceAt = (image: RgbaImage, x: number, y: number): number => {
  const [r, g, b] = pixelAt(image, x, y);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};

/** Nearest-neighbour scaling to `width` × `height`. */
export const resizeNearest = (image: RgbaImage, width: number, height: number): RgbaImage => {
  if (width * height > maxPixels) throw new InvalidPngError('Image size out of range');
  return makeImage(width, height, (x, y) =>
    pixelAt(image, Math.floor((x * image.width) / width), Math.floor((y * image.height) / height)),
  );
};

/** Bilinear upscaling by an integer factor. */
export const upscale = (image: RgbaImage, scale: number): RgbaImage => {
  const width = image.width * scale;
  const height = image.height * scale;
  if (width * height > maxPixels) throw new InvalidPngError(`Upscaled image would exceed ${maxPixels} pixels`);
  return makeImage(width, height, (x, y) => {
    const sx = (x + 0.5) / scale - 0.5;
    const sy = (y + 0.5) / scale - 0.5;
    const x0 = Math.floor(sx);
    const y0 = Math.floor(sy);
    const fx = sx - x0;
    const fy = sy - y0;
    const a = pixelAt(image, x0, y0);
    const b = pixelAt(image, x0 + 1, y0);
    const c = pixelAt(image, x0, y0 + 1);
    const d = pixelAt(image, x0 + 1, y0 + 1);
    return a.map((_, i) =>
      clamp(
        (a[i] as number) * (1 - fx) * (1 - fy) +
          (b[i] as number) * fx * (1 - fy) +
          (c[i] as number) * (1 - fx) * fy +
          (d[i] as number) * fx * fy,
      ),
    ) as Rgba;
  });
};

/** Sobel gradient of the luminance at (x, y). */
const gradientAt = (image: RgbaImage, x: number, y: number): { gx: number; gy: number } => {
  const l = (dx: number, dy: number) => luminanceAt(image, x + dx, y + dy);
  const gx = l(1, -1) + 2 * l(1, 0) + l(1, 1) - l(-1, -1) - 2 * l(-1, 0) - l(-1, 1);
  const gy = l(-1, 1) + 2 * l(0, 1) + l(1, 1) - l(-1, -1) - 2 * l(0, -1) - l(1, -1);
  return { gx, gy };
};

/** White edges on black where the luminance gradient is steep (a Canny-like control map). */
export const edgeMap = (image: RgbaImage, threshold = 96): RgbaImage =>
  makeImage(image.width, image.height, (x, y) => {
    const { gx, gy } = gradientAt(image, x, y);
    const v = Math.hypot(gx, gy) >= threshold ? 255 : 0;
    return [v, v, v, 255];
  });

/** A grey depth estimate: brighter is nearer (luminance, smoothed). */
export const depthMap = (image: RgbaImage): RgbaImage =>
  makeImage(image.width, image.height, (x, y) => {
    let sum = 0;
    for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) sum += luminanceAt(image, x + dx, y + dy);
    const v = clamp(sum / 9);
    return [v, v, v, 255];
  });

/** A tangent-space normal map from the luminance as a height field. */
export const normalMap = (image: RgbaImage, strength = 2): RgbaImage =>
  makeImage(image.width, image.height, (x, y) => {
    const { gx, gy } = gradientAt(image, x, y);
    const nx = (-gx / 255) * strength;
    const ny = (-gy / 255) * strength;
    const length = Math.hypot(nx, ny, 1);
    return [clamp((nx / length + 1) * 127.5), clamp((ny / length + 1) * 127.5), clamp((1 / length + 1) * 127.5), 255];
  });

/** Roughness: dark and busy areas rough, bright and smooth ones glossy. */
export const roughnessMap = (image: RgbaImage): RgbaImage =>
  makeImage(image.width, image.height, (x, y) => {
    const { gx, gy } = gradientAt(image, x, y);
    const v = clamp(255 - luminanceAt(image, x, y) * 0.7 + Math.hypot(gx, gy) * 0.3);
    return [v, v, v, 255];
  });

/** Albedo: the colours with lighting flattened (each pixel pulled towards the mean luminance). */
export const albedoMap = (image: RgbaImage): RgbaImage => {
  let total = 0;
  for (let y = 0; y < image.height; y++) for (let x = 0; x < image.width; x++) total += luminanceAt(image, x, y);
  const mean = total / (image.width * image.height) || 1;
  return makeImage(image.width, image.height, (x, y) => {
    const [r, g, b, a] = pixelAt(image, x, y);
    const l = luminanceAt(image, x, y) || 1;
    const k = 0.5 + (0.5 * mean) / l;
    return [clamp(r * k), clamp(g * k), clamp(b * k), a];
  });
};

/** Makes the background transparent: pixels close to the average border colour, feathered. */
export const removeBackground = (image: RgbaImage, tolerance = 48): RgbaImage => {
  const border: Rgba[] = [];
  for (let x = 0; x < image.width; x++) border.push(pixelAt(image, x, 0), pixelAt(image, x, image.height - 1));
  for (let y = 0; y < image.height; y++) border.push(pixelAt(image, 0, y), pixelAt(image, image.width - 1, y));
  const mean = [0, 1, 2].map((i) => border.reduce((s, p) => s + (p[i] as number), 0) / border.length);
  return makeImage(image.width, image.height, (x, y) => {
    const [r, g, b, a] = pixelAt(image, x, y);
    const distance = Math.hypot(r - (mean[0] as number), g - (mean[1] as number), b - (mean[2] as number));
    const alpha =
      distance <= tolerance ? 0 : distance >= tolerance * 2 ? a : clamp((a * (distance - tolerance)) / tolerance);
    return [r, g, b, alpha];
  });
};

/** Mixes `b` over `a` (same size) by `t` in 0..1. */
export const blend = (a: RgbaImage, b: RgbaImage, t: number): RgbaImage =>
  makeImage(a.width, a.height, (x, y) => {
    const p = pixelAt(a, x, y);
    const q = pixelAt(b, x, y);
    return p.map((v, i) => clamp(v * (1 - t) + (q[i] as number) * t)) as Rgba;
  });

/** Mean colour and size, for describing an image in words. */
export const imageStats = (image: RgbaImage): { width: number; height: number; mean: [number, number, number] } => {
  const sum = [0, 0, 0];
  for (let i = 0; i < image.data.length; i += 4)
    for (let c = 0; c < 3; c++) sum[c] = (sum[c] as number) + (image.data[i + c] as number);
  const n = image.width * image.height;
  return {
    width: image.width,
    height: image.height,
    mean: [clamp((sum[0] as number) / n), clamp((sum[1] as number) / n), clamp((sum[2] as number) / n)],
  };
};
