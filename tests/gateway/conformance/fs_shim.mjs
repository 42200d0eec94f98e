// Node 20 lacks fs.globSync (added in 22), which the conformance package imports for its
// tier-check command only: this module is fs plus a small globSync for "**/<name>" patterns.
import * as fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs.default ?? fs;

export function globSync(pattern, options = {}) {
  const match = /^\*\*\/([^*?[\]{}]+)$/.exec(pattern);
  if (!match) throw new Error(`fs_shim.globSync supports only "**/<name>" patterns, not ${pattern}`);
  const root = options.cwd ?? process.cwd();
  const out = [];
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel ? path.join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.name === match[1]) out.push(child);
    }
  };
  walk("");
  return out;
}
