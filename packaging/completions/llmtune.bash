# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for llmtune(1): commands, options, profile names (from `llmtune profiles`,
# under the --root given on the line, so site profiles are offered too), rule ids (from
# `llmtune explain --list`) and the values of options that take a fixed set.
# Installed as /usr/share/bash-completion/completions/llmtune (loaded on demand).

# The llmtune being completed: ./build/src/llmtune completes from that binary's data.
_llmtune_prog()
{
        local prog=${COMP_WORDS[0]}
        [[ $prog == */* && -x $prog ]] || prog=llmtune
        printf '%s\n' "$prog"
}

# First column of an llmtune listing, as completion words.
_llmtune_list()
{
        local prog
        prog=$(_llmtune_prog)
        "$prog" "$@" 2>/dev/null | awk 'NF && !seen[$1]++ { print $1 }'
}

_llmtune_options()
{
        case $1 in
        facts) echo "--json -j" ;;
        audit) echo "--profile -p --rule -r --json -j --format -f --output -o --quiet -q --only-failed --record-counters --fail-on --timeout --rule-timeout" ;;
        plan) echo "--profile -p --rule -r --json -j --exit-code --param --site-profile --pin" ;;
        apply) echo "--profile -p --rule -r --dry-run -n --json -j --wait -w --no-wait --reapply --param --site-profile --pin" ;;
        profile) echo "--profile -p --json -j" ;;
        rollback) echo "--last-run -l --to -t --all -a --force -f --wait -w --no-wait --dry-run -n --json -j" ;;
        recommend | profiles) echo "--json -j" ;;
        log) echo "--run -r --runs --json -j" ;;
        verify) echo "--verbose -v --json -j --expect-head" ;;
        ack) echo "--item -i --reason -r --until -u --for -f --profile -p --list -l --all -a --json -j" ;;
        unack) echo "--item -i --reason -r" ;;
        explain) echo "--list -l --profile -p --json -j" ;;
        exec) echo "--gpu -g --local-rank -l --node -N --policy -p --mem -m --strict -s --dry-run -n --verbose -v" ;;
        affinity) echo "--gpu -g --policy -p --installed -i" ;;
        baseline) echo "--profile -p --output -o" ;;
        nccl) echo "--profile -p" ;;
        report) echo "--format -f --csv -c --by-host -b --json -j --html -H --output -o --keep-going -k --consistency -C --consistency-rules -R --reference -r --profile -p" ;;
        gather) echo "--output -o --exclude -x --anonymize -a" ;;
        health-check) echo "--slurm -s --severity -S --drain-on-error -E --node -n --profile -p --config -c --verbose -v --record-counters --prolog --timeout --rule-timeout" ;;
        esac
        echo "--help -h"
}

_llmtune()
{
        local commands="facts audit recommend profiles profile explain lint plan apply rollback log verify ack unack exec affinity baseline nccl report health-check gather help"
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        local i w cmd="" root="" sub="" dashdash=0 nargs=0
        COMPREPLY=()
        # "--opt=value": bash splits at '=' (COMP_WORDBREAKS); complete the value of --opt.
        if [[ $cur == = ]]; then
                prev=${COMP_WORDS[COMP_CWORD - 1]}
                cur=""
        elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
                prev=${COMP_WORDS[COMP_CWORD - 2]}
        fi

        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                if ((dashdash)); then
                        continue
                fi
                case $w in
                --root)
                        if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                                root=${COMP_WORDS[i + 2]}
                                ((i += 2))
                        else
                                root=${COMP_WORDS[i + 1]}
                                ((i++))
                        fi
                        continue
                        ;;
                --read-timeout)
                        [[ ${COMP_WORDS[i + 1]} == = ]] && ((i++))
                        ((i++))
                        continue
                        ;;
                --)
                        dashdash=1
                        continue
                        ;;
                esac
                if [[ -z $cmd ]]; then
                        [[ $w == -* ]] || cmd=$w
                elif [[ $w != -* && $w != = ]]; then
                        [[ -z $sub ]] && sub=$w
                        ((nargs++))
                fi
        done
        local rootopt=()
        [[ -n $root ]] && rootopt=(--root "$root")

        # exec: everything after "--" is the command to run.
        if ((dashdash)) && [[ $cmd == exec ]]; then
                local k
                for ((k = 1; k < COMP_CWORD; k++)); do
                        [[ ${COMP_WORDS[k]} == -- ]] && break
                done
                if ((k + 1 == COMP_CWORD)); then
                        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
                else
                        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                fi
                return 0
        fi

        # ack and unack: -r is --reason, -f --for; their values are free text
        if [[ $cmd == ack || $cmd == unack ]]; then
                case $prev in
                --reason | -r | --until | -u | --for | -f | --item | -i) return 0 ;;
                esac
        fi
        case $prev in
        --root)
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                return 0
                ;;
        --profile | -p)
                if [[ $cmd == exec || $cmd == affinity ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "node share share-nosmt" -- "$cur")
                else
                        mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list "${rootopt[@]}" profiles)" -- "$cur")
                        [[ $cur == */* || $cur == .* ]] && mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -X '!*.ini' -- "$cur"; compgen -d -- "$cur")
                fi
                return 0
                ;;
        --fail-on)
                mapfile -t COMPREPLY < <(compgen -W "critical warning info" -- "$cur")
                return 0
                ;;
        --policy)
                mapfile -t COMPREPLY < <(compgen -W "node share share-nosmt" -- "$cur")
                return 0
                ;;
        --mem | -m)
                mapfile -t COMPREPLY < <(compgen -W "bind preferred none" -- "$cur")
                return 0
                ;;
        --format | -f)
                if [[ $cmd == report ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "table csv json html" -- "$cur")
                        return 0
                elif [[ $cmd == audit ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "human json prometheus nfd" -- "$cur")
                        return 0
                fi
                ;;
        --severity | -S)
                if [[ $cmd == health-check ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "info warning critical" -- "$cur")
                        return 0
                fi
                ;;
        --config | -c)
                if [[ $cmd == health-check ]]; then
                        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                        return 0
                fi
                ;;
        --output | -o | --consistency-rules | -R | --reference)
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                return 0
                ;;
        --gpu | -g | --node | -N | --to | -t | --read-timeout | --timeout | --rule-timeout)
                return 0
                ;;
        --run)
                # run ids, from `llmtune log --runs` under the --root of the line
                mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list "${rootopt[@]}" log --runs | grep -v '^RUN$')" -- "$cur")
                return 0
                ;;
        --rule | -r)
                if [[ $cmd == log ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list "${rootopt[@]}" log --runs | grep -v '^RUN$')" -- "$cur")
                        return 0
                fi
                mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list explain --list)" -- "$cur")
                return 0
                ;;
        esac

        if [[ -z $cmd ]]; then
                if [[ $cur == -* ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "--root --read-timeout --help -h --version -V" -- "$cur")
                else
                        mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
                fi
                return 0
        fi

        if [[ $cur == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_options "$cmd") --root --read-timeout" -- "$cur")
                return 0
        fi

        # A bare word after --rule ID... is another rule id (audit, plan, apply).
        case $cmd in
        audit | plan | apply)
                for ((i = COMP_CWORD - 1; i > 0; i--)); do
                        w=${COMP_WORDS[i]}
                        [[ $w == -* ]] || continue
                        [[ $w == --rule || $w == -r ]] &&
                                mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list explain --list)" -- "$cur")
                        break
                done
                ;;
        profiles)
                if ((nargs == 0)); then
                        mapfile -t COMPREPLY < <(compgen -W "show" -- "$cur")
                elif [[ $sub == show && $nargs -eq 1 ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list "${rootopt[@]}" profiles)" -- "$cur")
                        [[ $cur == */* || $cur == .* ]] && mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -X '!*.ini' -- "$cur"; compgen -d -- "$cur")
                fi
                ;;
        profile)
                if ((nargs == 0)); then
                        mapfile -t COMPREPLY < <(compgen -W "set unset" -- "$cur")
                elif [[ $sub == set && $nargs -eq 1 ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list "${rootopt[@]}" profiles)" -- "$cur")
                fi
                ;;
        explain | ack | unack)
                ((nargs == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_llmtune_list explain --list)" -- "$cur")
                ;;
        help)
                ((nargs == 0)) && mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
                ;;
        nccl)
                if ((nargs == 0)); then
                        mapfile -t COMPREPLY < <(compgen -W "lint env conf" -- "$cur")
                elif [[ $sub == lint ]]; then
                        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                fi
                ;;
        lint)
                mapfile -t COMPREPLY < <(compgen -f -X '!*.ini' -- "$cur"; compgen -d -- "$cur")
                ;;
        report)
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                ;;
        exec)
                mapfile -t COMPREPLY < <(compgen -W "--" -- "$cur")
                ;;
        esac
        return 0
} &&
        complete -F _llmtune llmtune
