/**
 * A development task's files (workspaces.ts): a tree of its own, on a filesystem of its own where the machine allows
 * (workspace-volume.ts), read without following links (tree-walk.ts, workspace-snapshot.ts) and committed and diffed
 * by Git on the host (workspace-git.ts); and the routes that let the task's owner read them (workspace-routes.ts).
 */
export {
  asText,
  createWorkspaces,
  pathSegments,
  WorkspacePathError,
  type TaskWorkspace,
  type WorkspaceCommit,
  type WorkspaceEntry,
  type Workspaces,
} from './workspaces.ts'
export { workspaceRoutes } from './workspace-routes.ts'
