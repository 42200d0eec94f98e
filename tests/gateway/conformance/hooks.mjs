// Module hooks: the conformance package's `fs` import resolves to fs_shim.mjs where the running
// Node has no fs.globSync (registered by register.mjs through `node --import`).
const SHIM = new URL("./fs_shim.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
