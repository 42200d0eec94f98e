import * as fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") register("./hooks.mjs", import.meta.url);
