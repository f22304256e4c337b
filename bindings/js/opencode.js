// agentwire's OpenCode plugin, as OpenCode loads it (`agentwire/server`, the entry OpenCode
// looks for in a plugin package; `agentwire/opencode` is the same plugin, typed). The plugin
// itself is built into dist/; a package installed from a folder that was never built says
// so here, rather than with a module-not-found error.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('./dist/opencode/index.js', import.meta.url);
if (!existsSync(built)) {
  const folder = fileURLToPath(new URL('.', import.meta.url));
  throw new Error(
    `agentwire is not built in ${folder}: run \`npm run build\` there (it needs Rust; bindings/js/setup.sh installs the rest), or install the packed package instead (\`npm pack\` in that folder gives agentwire-<version>.tgz, with the build inside)`,
  );
}
const plugin = await import(built.href);
export default plugin.default;
