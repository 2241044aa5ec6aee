// The installed package's rollcall.d.ts against its rollcall.js (clients/js, packed and
// installed by support/package.mjs): the declared value exports, client and roster methods,
// error codes and close codes match what the module really has; and, when TypeScript's `tsc`
// is installed (Debian: node-typescript), Tests/js/types/usage.ts type-checks against the
// declarations, importing "@rollcall/client" from the installed project (the `exports` map's
// `types` condition, moduleResolution node16).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ROOT } from "./support/broker.mjs";
import { installedPackages } from "./support/package.mjs";
import { rollcall } from "./support/rollcall.mjs";

const { project } = installedPackages();
const dts = readFileSync(join(project, "node_modules", "@rollcall", "client", "rollcall.d.ts"), "utf8");

/** The text of `export class NAME … {…}` in the declarations (up to the closing brace at column 0). */
function classBody(name) {
  const start = dts.indexOf(`export class ${name} `);
  assert.ok(start >= 0, `class ${name} is declared`);
  return dts.slice(start, dts.indexOf("\n}\n", start));
}

/** Public methods of a class's prototype chain up to Object (the emitter's `on` included). */
function methods(klass) {
  const names = new Set();
  for (let proto = klass.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name !== "constructor" && name !== "emit" && typeof Object.getOwnPropertyDescriptor(proto, name).value === "function") names.add(name);
    }
  }
  return [...names].sort();
}

test("every value export is declared, and nothing more", () => {
  const declared = [...dts.matchAll(/^export (?:class|function|const) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(rollcall).sort());
});

test("RollcallClient and Roster: every public method is declared, and every declared one exists", () => {
  for (const klass of [rollcall.RollcallClient, rollcall.Roster]) {
    const body = classBody(klass.name) + dts.slice(dts.indexOf("declare class Emitter"), dts.indexOf("\n}\n", dts.indexOf("declare class Emitter")));
    const declared = [...body.matchAll(/^  (\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]).filter((name) => name !== "emit" && name !== "constructor");
    assert.deepEqual([...new Set(declared)].sort(), methods(klass), klass.name);
  }
});

test("ErrorCode lists PROTOCOL §7's codes; ERROR_CODES is that list plus DISCONNECTED and TIMEOUT", () => {
  const union = dts.slice(dts.indexOf("export type ErrorCode ="), dts.indexOf(";", dts.indexOf("export type ErrorCode =")));
  const codes = [...union.matchAll(/"([A-Z_]+)"/g)].map((m) => m[1]);
  assert.equal(codes.length, 24);
  assert.deepEqual([...codes, "DISCONNECTED", "TIMEOUT"], [...rollcall.ERROR_CODES]);
});

test("CloseCode: the declared names and numbers are the module's", () => {
  const block = dts.slice(dts.indexOf("export const CloseCode"), dts.indexOf("}>;", dts.indexOf("export const CloseCode")));
  const declared = Object.fromEntries([...block.matchAll(/^  (\w+): (\d+);/gm)].map((m) => [m[1], Number(m[2])]));
  assert.deepEqual(declared, { ...rollcall.CloseCode });
});

test("Tests/js/types/usage.ts and react-usage.ts type-check against the installed packages' declarations (tsc --strict)", (t) => {
  const probe = spawnSync("tsc", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) return t.skip("tsc is not installed (Debian: apt-get install node-typescript)");
  // In a folder of the installed project, so that "@rollcall/client" resolves as for a user.
  const folder = mkdtempSync(join(project, "types-"));
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  for (const file of ["usage.ts", "react-usage.ts"]) copyFileSync(join(ROOT, "Tests", "js", "types", file), join(folder, file));
  copyFileSync(join(ROOT, "Tests", "js", "types", "tsconfig.json"), join(folder, "tsconfig.json"));
  const run = spawnSync("tsc", ["-p", join(folder, "tsconfig.json")], { encoding: "utf8" });
  assert.equal(run.status, 0, `${probe.stdout.trim()}:\n${run.stdout}${run.stderr}`);
});
