// Loads React 18 and react-test-renderer from Debian's packages (node-react,
// node-react-test-renderer; /usr/share/nodejs), when they are installed, so that the
// usePresence hook can run under real React. Node from outside Debian does not search
// /usr/share/nodejs: CommonJS gets it through NODE_PATH, ES imports of "react" through a
// resolve hook. Returns null when the packages are missing (the test then skips).

import { existsSync } from "node:fs";
import { createRequire, Module, register } from "node:module";

const SHARE = "/usr/share/nodejs";

/** @returns {Promise<{React: any, TestRenderer: any} | null>} */
export async function loadDebianReact() {
  if (!existsSync(`${SHARE}/react/index.js`) || !existsSync(`${SHARE}/react-test-renderer/index.js`)) return null;
  process.env.NODE_PATH = [SHARE, process.env.NODE_PATH].filter(Boolean).join(":");
  Module._initPaths(); // CommonJS: react-test-renderer's own require("react") finds the same copy
  const hook = `
    export async function resolve(specifier, context, next) {
      if (specifier === "react" || specifier === "react-test-renderer") {
        return next("file://${SHARE}/" + specifier + "/index.js", context);
      }
      return next(specifier, context);
    }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
  const require = createRequire(import.meta.url);
  globalThis.IS_REACT_ACT_ENVIRONMENT = true;
  return { React: require("react"), TestRenderer: require("react-test-renderer") };
}
