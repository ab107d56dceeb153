// The ES module face of the Node API: the same functions as index.js.
import api from "./index.js";

export const { listTools, callTool, SatoriClient } = api;
export default api;
