// The client packages as a user gets them: `npm pack` of clients/js (and clients/react), then
// `npm install --offline` of the tarballs into an empty temporary project. The tests import
// the client from there (support/rollcall.mjs), so what they test is what the tarball holds.
//
// One project per content of the packages, shared by every test file of a run (node --test runs
// each file in its own process): it is built in a fresh folder and renamed into place, so
// processes that race each build one and all but the first rename keep the winner's.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { ROOT } from "./broker.mjs";

/** The package folders, in install order (a later one may depend on an earlier one). */
export const PACKAGES = ["clients/js", "clients/react"].filter((folder) => existsSync(join(ROOT, folder, "package.json")));

/** The files whose content names the project (a change makes a new one). */
function fingerprint() {
  const hash = createHash("sha256");
  for (const folder of PACKAGES) {
    for (const name of readdirSync(join(ROOT, folder)).sort()) {
      if (/\.(m?js|ts|json|md)$/.test(name)) hash.update(`${folder}/${name}\0`).update(readFileSync(join(ROOT, folder, name)));
    }
  }
  hash.update(readFileSync(join(ROOT, "LICENSE")));
  return hash.digest("hex").slice(0, 16);
}

/** `npm` with no network, no audit, quiet; returns its stdout. */
function npm(args, cwd) {
  return execFileSync("npm", [...args, "--offline", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/**
 * Packs every package and installs the tarballs into an empty project (once per content).
 * @returns {{project: string, tarballs: Record<string, string>}} the project folder, and each
 *   package folder's tarball path
 */
export function installedPackages() {
  const project = join(tmpdir(), `rollcall-packages-${fingerprint()}`);
  const tarballs = () =>
    Object.fromEntries(PACKAGES.map((folder) => {
      const name = JSON.parse(readFileSync(join(ROOT, folder, "package.json"), "utf8")).name;
      const file = readdirSync(join(project, "tarballs")).find((f) => f.startsWith(name.replace("@", "").replace("/", "-") + "-"));
      return [folder, join(project, "tarballs", file)];
    }));
  if (existsSync(join(project, "ready"))) return { project, tarballs: tarballs() };
  const building = mkdtempSync(join(tmpdir(), "rollcall-packages-build-"));
  const packed = join(building, "tarballs");
  mkdirSync(packed);
  writeFileSync(join(building, "package.json"), JSON.stringify({ name: "rollcall-test-project", private: true, type: "module" }));
  const files = PACKAGES.map((folder) => join(packed, npm(["pack", "--pack-destination", packed], join(ROOT, folder)).trim().split("\n").pop()));
  npm(["install", ...files], building);
  // ES modules of the project that import each package by its name, through its `exports` map.
  writeFileSync(join(building, "client-entry.mjs"), 'export * from "@rollcall/client";\n');
  writeFileSync(join(building, "store-entry.mjs"), 'export * from "@rollcall/react/presenceStore";\n');
  writeFileSync(join(building, "react-entry.mjs"), 'export * from "@rollcall/react";\n');
  writeFileSync(join(building, "ready"), "");
  try {
    renameSync(building, project);
  } catch (error) {
    rmSync(building, { recursive: true, force: true }); // another process got there first
    if (!existsSync(join(project, "ready"))) throw error;
  }
  return { project, tarballs: tarballs() };
}
