/** Bounds the forms state; the routes enforce them again (the decisions record says why they are these). */
export const passwordMinLength = 12;
export const passwordMaxLength = 1024;
export const emailMaxLength = 254;
export const keyNameMaxLength = 100;
