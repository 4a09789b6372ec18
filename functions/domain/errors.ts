/**
 * The errors below the HTTP edge throw, named for what went wrong. They are declared as rows of
 * one table, functions/errors/table.ts (facts, message, status, body, schema); this module keeps
 * the name every throw site imports them by.
 */
export * from '../errors/table.ts';
