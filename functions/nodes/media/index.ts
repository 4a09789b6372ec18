export * from './c2pa.ts';
export * from './glb.ts';
export * from './image-ops.ts';
export * from './marks.ts';
export * from './png.ts';
export * from './wav.ts';
