// Types of the Node API of @zokizuan/satori-mcp for ES modules (`import`, index.mjs): the
// declarations of index.d.ts, and the default export that index.mjs adds.
import { callTool, listTools, SatoriClient } from "./index.js";

export * from "./index.js";

/** The whole API as one object: `import satori from "@zokizuan/satori-mcp"`. */
declare const api: {
  listTools: typeof listTools;
  callTool: typeof callTool;
  SatoriClient: typeof SatoriClient;
};
export default api;
