# embed.cmake — writes a C file defining one NUL-terminated char array (NAME) with the bytes of IN (a kernel's source).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed.cmake: do not edit. */\n"
  "extern const char ${NAME}[];\nconst char ${NAME}[] = {${body}0};\n")
