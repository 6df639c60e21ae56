/** Types of tools/prerequisites.js (a plain script run before the TypeScript toolchain). */
export declare const EXIT_MISSING: number;
export declare function onPath(name: string, env?: NodeJS.ProcessEnv): string | undefined;
export declare function findPostgresBin(env?: NodeJS.ProcessEnv): string | undefined;
export declare function postgresServerUser(env?: NodeJS.ProcessEnv): { uid: number; gid: number } | undefined;
export declare function findChromium(env?: NodeJS.ProcessEnv): string | undefined;
export declare function reachableFiles(specFiles: readonly string[]): Set<string>;
export declare function allSpecFiles(): string[];
export declare function specFilesOfRun(jestArgs: readonly string[], node?: string): string[];
export interface MissingPrerequisite {
  readonly name: string;
  readonly neededBy: string;
  readonly problem: string;
  readonly install: readonly string[];
  readonly instead: string;
}
export declare function missingPrerequisites(specFiles: readonly string[], env?: NodeJS.ProcessEnv): MissingPrerequisite[];
export declare function formatMissing(missing: readonly MissingPrerequisite[]): string;
