// The `@rollcall/client` package (clients/js): its package.json is what npm and TypeScript
// need, `npm pack` gives a tarball with the client, its types, README and LICENSE and nothing
// else, it installs offline into an empty project (support/package.mjs), and the demo page
// serves the same file: examples/web/rollcall.js links to it, and the broker sends its bytes.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { Broker, ROOT } from "./support/broker.mjs";
import { installedPackages } from "./support/package.mjs";

const FOLDER = join(ROOT, "clients", "js");
const manifest = JSON.parse(readFileSync(join(FOLDER, "package.json"), "utf8"));

test("package.json: name, version, ES module, exports with types and default, files, license, no dependencies", () => {
  assert.equal(manifest.name, "@rollcall/client");
  assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
  assert.equal(manifest.type, "module");
  assert.deepEqual(manifest.exports["."], { types: "./rollcall.d.ts", default: "./rollcall.js" });
  assert.equal(Object.keys(manifest.exports["."])[0], "types", "types comes first (TypeScript reads the conditions in order)");
  assert.deepEqual([...manifest.files].sort(), ["LICENSE", "README.md", "rollcall.d.ts", "rollcall.js"]);
  assert.equal(manifest.license, "Apache-2.0");
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) assert.equal(manifest[field], undefined, field);
});

test("npm pack: the tarball holds exactly the client, its types, README, LICENSE and package.json", () => {
  const { tarballs } = installedPackages();
  const listing = execFileSync("tar", ["-tzf", tarballs["clients/js"]], { encoding: "utf8" }).trim().split("\n").sort();
  assert.deepEqual(listing, ["package/LICENSE", "package/README.md", "package/package.json", "package/rollcall.d.ts", "package/rollcall.js"]);
});

test("installed offline: the project's copy is the source file, and the LICENSE is the repository's (Apache-2.0)", () => {
  const installed = join(installedPackages().project, "node_modules", "@rollcall", "client");
  assert.deepEqual(readFileSync(join(installed, "rollcall.js")), readFileSync(join(FOLDER, "rollcall.js")));
  assert.deepEqual(readFileSync(join(installed, "rollcall.d.ts")), readFileSync(join(FOLDER, "rollcall.d.ts")));
  const license = readFileSync(join(installed, "LICENSE"), "utf8");
  assert.equal(license, readFileSync(join(ROOT, "LICENSE"), "utf8"));
  assert.match(license, /Apache License\s+Version 2\.0, January 2004/);
});

test("@rollcall/react: package.json (exports with types and default, Apache-2.0, @rollcall/client as a peer) and its tarball", () => {
  const react = JSON.parse(readFileSync(join(ROOT, "clients", "react", "package.json"), "utf8"));
  assert.equal(react.name, "@rollcall/react");
  assert.equal(react.type, "module");
  assert.deepEqual(react.exports["."], { types: "./index.d.ts", default: "./index.js" });
  assert.equal(react.license, "Apache-2.0");
  assert.equal(react.dependencies, undefined);
  assert.equal(react.peerDependencies["@rollcall/client"], `^${manifest.version}`);
  const { tarballs, project } = installedPackages();
  const listing = execFileSync("tar", ["-tzf", tarballs["clients/react"]], { encoding: "utf8" }).trim().split("\n").sort();
  assert.deepEqual(listing, ["package/LICENSE", "package/README.md", "package/index.d.ts", "package/index.js", "package/package.json", "package/presenceStore.d.ts", "package/presenceStore.js"]);
  assert.deepEqual(readFileSync(join(project, "node_modules", "@rollcall", "react", "presenceStore.js")), readFileSync(join(ROOT, "clients", "react", "presenceStore.js")));
});

describe("the demo page serves the package's file (one copy)", () => {
  /** @type {Broker} */ let broker;
  before(async () => (broker = await Broker.start()));
  after(() => broker?.dispose());

  test("examples/web/rollcall.js is a link to clients/js/rollcall.js, and GET /rollcall.js returns its bytes", async () => {
    assert.equal(realpathSync(join(ROOT, "examples", "web", "rollcall.js")), realpathSync(join(FOLDER, "rollcall.js")));
    const response = await fetch(`http://127.0.0.1:${broker.port}/rollcall.js`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type"), /^text\/javascript/);
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), readFileSync(join(FOLDER, "rollcall.js")));
  });
});
