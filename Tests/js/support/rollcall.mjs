// The JavaScript client as the tests use it: `@rollcall/client` imported from a temporary
// project that installed the packed tarball (support/package.mjs), not from the source folder.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { installedPackages } from "./package.mjs";

/** The package's module namespace, as `import * as rollcall from "@rollcall/client"` gives it. */
export const rollcall = await import(pathToFileURL(join(installedPackages().project, "client-entry.mjs")).href);

export const { CloseCode, ERROR_CODES, RollcallClient, RollcallError, Roster, channelKey, connect } = rollcall;
