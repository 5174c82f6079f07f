/**
 * @promptsvc/client/node: what only Node.js can offer the SDK. The main entry point
 * stays free of Node-only APIs (it runs on edge runtimes too).
 */

export { FileSnapshotStore } from "./file-store.js";
