// The schema of data/systems/*.yaml. The bundled files are checked against it by the tests (test/inputs/systems.test.ts)
// rather than at each start-up; tools that write system files can check theirs with it too.
import { z } from 'zod';

const positive = z.number().positive();

const backendSupportSchema = z
  .strictObject({
    versions: z.array(z.string().min(1)).min(1),
    default: z.string().min(1),
  })
  .refine((b) => b.versions.includes(b.default), { message: 'default must be one of versions' })
  .refine((b) => new Set(b.versions).size === b.versions.length, { message: 'versions must be unique' });

export const systemSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9_]+$/),
  aliases: z.array(z.string().min(1)).default([]),
  gpu: z.strictObject({
    name: z.string().min(1),
    memGiB: positive,
    memBwGBs: positive,
    tflops: z.strictObject({
      bfloat16: positive,
      fp8: positive.optional(),
      nvfp4: positive.optional(),
      int8: positive.optional(),
      int4: positive.optional(),
    }),
    numSms: z.number().int().positive(),
    l2MiB: positive,
  }),
  gpusPerNode: z.number().int().positive(),
  intraNodeLink: z.enum(['nvlink', 'pcie']),
  intraNodeBwGBs: positive,
  interNodeBwGBs: positive,
  kernelsLike: z.string().regex(/^[a-z0-9_]+$/).optional(),
  backends: z.strictObject({
    vllm: backendSupportSchema.optional(),
    sglang: backendSupportSchema.optional(),
    trtllm: backendSupportSchema.optional(),
  }),
});
